#!/usr/bin/env bash
# Run a spark-topics job on a cluster with spark-submit, shipping the project's code to the executors.
#
#   deploy/submit.sh [--master URL] [--env] [--spark-arg ARG]... JOB [job flags...]
#
#   JOB      prepare | train | infer | evaluate | topics   (runs jobs/JOB.py with the same flags as
#            `spark-topics JOB`)
#   --master spark://host:7077, yarn, k8s://..., local[*] (default: $SPARK_MASTER or local[*])
#   --env    also ship the packed virtual environment (deploy/package.sh --with-env) and run the
#            executors' Python from it; without it executors use $PYSPARK_PYTHON (default: this python),
#            which must have numpy, scipy, numba, pyarrow and pandas installed.
#   --spark-arg ARG  passed to spark-submit as is (repeatable), e.g. --spark-arg --executor-memory=4g
#
# Example (standalone cluster):
#   deploy/submit.sh --master spark://10.0.0.5:7077 train --corpus hdfs:///c --output hdfs:///m --topics 50
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dist="${SPARK_TOPICS_DIST:-$here/dist}"
master="${SPARK_MASTER:-local[*]}"
use_env=0
spark_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --master) master="$2"; shift 2 ;;
    --env) use_env=1; shift ;;
    --spark-arg) spark_args+=("$2"); shift 2 ;;
    *) break ;;
  esac
done
job="${1:?usage: deploy/submit.sh [--master URL] [--env] JOB [flags]}"; shift
[[ -f "$here/jobs/$job.py" ]] || { echo "unknown job '$job' (no jobs/$job.py)" >&2; exit 2; }

python="${PYTHON:-$(command -v python3)}"
submit="${SPARK_SUBMIT:-$(command -v spark-submit || true)}"
[[ -n "$submit" ]] || submit="$("$python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit"))')"

code="$dist/spark_topics_code.zip"
if [[ ! -f "$code" ]] || [[ -n "$(find "$here/jobs" "$here/inference" "$here/drivers" "$here/partitioners" -name '*.py' -newer "$code" | head -1)" ]]; then
  PYTHON="$python" "$here/deploy/package.sh" >&2
fi

# Unix domain sockets between the JVM and the Python workers (see jobs/spark.py UDS_KEY); a later
# --spark-arg --conf=spark.python.unix.domain.socket.enabled=false overrides it.
args=(--master "$master" --py-files "$code" --conf spark.pyspark.driver.python="$python"
      --conf spark.python.unix.domain.socket.enabled=true)
if [[ $use_env == 1 ]]; then
  [[ -f "$dist/spark_topics_env.tar.gz" ]] || PYTHON="$python" "$here/deploy/package.sh" --with-env >&2
  args+=(--archives "$dist/spark_topics_env.tar.gz#env" --conf spark.pyspark.python=./env/bin/python)
else
  args+=(--conf spark.pyspark.python="${PYSPARK_PYTHON:-$python}")
fi
exec "$submit" "${args[@]}" ${spark_args[@]+"${spark_args[@]}"} "$here/jobs/$job.py" "$@"
