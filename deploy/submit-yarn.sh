#!/usr/bin/env bash
# Run a spark-topics job on YARN in cluster mode (the driver runs in the application master) with the
# packed virtual environment, as the PySpark and venv-pack docs describe:
#
#   deploy/submit-yarn.sh [--env-archive FILE] [--queue QUEUE] [--name NAME] [--spark-arg ARG]...
#                         [--print-command] JOB [job flags...]
#
#   JOB      prepare | train | infer | evaluate | topics | refresh | ...  (jobs/JOB.py, the flags of
#            `spark-topics JOB`)
#   --env-archive FILE  the env to ship (default: dist/spark_topics_env.tar.gz, built or refreshed by
#            deploy/package.sh --with-env). venv-pack links the env's python to this machine's interpreter:
#            the YARN nodes need the same Python at the same path (or build with
#            deploy/package.sh --with-env --python-prefix /usr on a matching machine)
#   --queue QUEUE, --name NAME  YARN queue and application name (default name: spark-topics-JOB)
#   --spark-arg ARG  passed to spark-submit as is (repeatable), e.g. --spark-arg --num-executors=8
#   --print-command  print the spark-submit command (shell-quoted, one line) instead of running it;
#            builds nothing and needs no YARN
#
# What it passes: --master yarn --deploy-mode cluster, --archives ENV#environment,
# spark.yarn.appMasterEnv.PYSPARK_PYTHON and spark.executorEnv.PYSPARK_PYTHON = ./environment/bin/python
# (the driver's and the executors' Python), the code zip with --py-files, and never
# spark.pyspark.driver.python (a path of this machine); PYSPARK_DRIVER_PYTHON is unset because YARN copies
# it into the driver's environment, where it would win over appMasterEnv.
# HADOOP_CONF_DIR (or YARN_CONF_DIR) must point at the cluster's configuration.
#
# Example:
#   deploy/submit-yarn.sh --queue batch train --corpus hdfs:///topics/corpus --output hdfs:///topics/m50 --topics 50
#   deploy/submit-yarn.sh refresh --model-dir hdfs:///topics/model --input hdfs:///topics/incoming --keep 30
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dist="${SPARK_TOPICS_DIST:-$here/dist}"
env_archive=""
queue=""
name=""
print_only=0
spark_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --env-archive) env_archive="$2"; shift 2 ;;
    --queue) queue="$2"; shift 2 ;;
    --name) name="$2"; shift 2 ;;
    --spark-arg) spark_args+=("$2"); shift 2 ;;
    --print-command) print_only=1; shift ;;
    *) break ;;
  esac
done
job="${1:?usage: deploy/submit-yarn.sh [--env-archive FILE] [--queue Q] [--print-command] JOB [flags]}"; shift
[[ -f "$here/jobs/$job.py" ]] || { echo "unknown job '$job' (no jobs/$job.py)" >&2; exit 2; }
for arg in ${spark_args[@]+"${spark_args[@]}"}; do
  case "$arg" in
    *spark.pyspark.driver.python*|*PYSPARK_DRIVER_PYTHON*)
      echo "deploy/submit-yarn.sh: '$arg' would point the driver at a Python path of the submitting machine;" \
           "in cluster mode the driver uses ./environment/bin/python" >&2
      exit 2 ;;
  esac
done

# this python: $PYTHON, else the project's .venv (deploy/setup.sh; activated or not), else python3 on the PATH
python="${PYTHON:-}"
[[ -n "$python" || ! -x "$here/.venv/bin/python" ]] || python="$here/.venv/bin/python"
[[ -n "$python" ]] || python="$(command -v python3)"
submit="${SPARK_SUBMIT:-$(command -v spark-submit || true)}"
[[ -n "$submit" ]] || submit="$("$python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit"))')"

code="$dist/spark_topics_code.zip"
if [[ -z "$env_archive" ]]; then
  env_archive="$dist/spark_topics_env.tar.gz"
  [[ $print_only == 1 ]] || PYTHON="$python" "$here/deploy/package.sh" --with-env >&2   # zip; env when stale
elif [[ $print_only == 0 ]]; then
  PYTHON="$python" "$here/deploy/package.sh" >&2
  [[ -f "$env_archive" ]] || { echo "no env archive at $env_archive" >&2; exit 2; }
fi

env_python=./environment/bin/python
args=(--master yarn --deploy-mode cluster --name "${name:-spark-topics-$job}")
[[ -z "$queue" ]] || args+=(--queue "$queue")
args+=(--archives "$env_archive#environment"
       --py-files "$code"
       --conf "spark.yarn.appMasterEnv.PYSPARK_PYTHON=$env_python"
       --conf "spark.executorEnv.PYSPARK_PYTHON=$env_python"
       --conf spark.python.unix.domain.socket.enabled=true)
command=("$submit" "${args[@]}" ${spark_args[@]+"${spark_args[@]}"} "$here/jobs/$job.py" "$@")
if [[ $print_only == 1 ]]; then
  printf '%q ' "${command[@]}" | sed 's/ $//'
  echo
  exit 0
fi
unset PYSPARK_DRIVER_PYTHON
exec "${command[@]}"
