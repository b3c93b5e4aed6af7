#!/usr/bin/env bash
# Run a spark-topics job on a cluster with spark-submit, shipping the project's code to the executors.
#
#   deploy/submit.sh [--master URL] [--deploy-mode client|cluster] [--env | --env-archive FILE]
#                    [--spark-arg ARG]... [--print-command] JOB [job flags...]
#
#   JOB      prepare | train | infer | evaluate | topics | refresh | ...  (runs jobs/JOB.py with the same
#            flags as `spark-topics JOB`)
#   --master spark://host:7077, yarn, k8s://..., local[*] (default: $SPARK_MASTER or local[*])
#   --deploy-mode  client (default: the driver runs here, with this python) or cluster (the driver runs on
#            the cluster: no submit-host python path is passed; with --env the driver uses the packed env
#            too). Standalone clusters do not run Python drivers in cluster mode; for YARN see
#            deploy/submit-yarn.sh.
#   --env    also ship the packed virtual environment (deploy/package.sh --with-env, built or refreshed when
#            needed) as --archives ...#environment and run the executors' Python (and in cluster mode the
#            driver's) from it: ./environment/bin/python. Without it executors use $PYSPARK_PYTHON (default:
#            this python), which must have numpy, scipy, numba, pyarrow and pandas installed.
#   --env-archive FILE  like --env with an env archive built elsewhere
#   --spark-arg ARG  passed to spark-submit as is (repeatable), e.g. --spark-arg --executor-memory=4g
#   --print-command  print the spark-submit command (shell-quoted, one line) instead of running it; builds
#            nothing
#
# The python is $PYTHON, else the project's .venv/bin/python when deploy/setup.sh made one (it need not be
# activated), else python3 on the PATH; spark-submit is $SPARK_SUBMIT, else the one on the PATH, else pyspark's
# of that python.
#
# Example (standalone cluster):
#   deploy/submit.sh --master spark://10.0.0.5:7077 train --corpus hdfs:///c --output hdfs:///m --topics 50
#   deploy/submit.sh --master spark://10.0.0.5:7077 --env refresh --model-dir hdfs:///topics --input hdfs:///new
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dist="${SPARK_TOPICS_DIST:-$here/dist}"
master="${SPARK_MASTER:-local[*]}"
deploy_mode=client
use_env=0
env_archive=""
print_only=0
spark_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --master) master="$2"; shift 2 ;;
    --deploy-mode) deploy_mode="$2"; shift 2 ;;
    --env) use_env=1; shift ;;
    --env-archive) use_env=1; env_archive="$2"; shift 2 ;;
    --spark-arg) spark_args+=("$2"); shift 2 ;;
    --print-command) print_only=1; shift ;;
    *) break ;;
  esac
done
job="${1:?usage: deploy/submit.sh [--master URL] [--deploy-mode client|cluster] [--env] JOB [flags]}"; shift
[[ -f "$here/jobs/$job.py" ]] || { echo "unknown job '$job' (no jobs/$job.py)" >&2; exit 2; }
for arg in ${spark_args[@]+"${spark_args[@]}"}; do   # --spark-arg --deploy-mode=cluster counts too
  [[ "$arg" == --deploy-mode=* ]] && deploy_mode="${arg#--deploy-mode=}"
done
[[ "$deploy_mode" == client || "$deploy_mode" == cluster ]] \
  || { echo "--deploy-mode must be client or cluster, not '$deploy_mode'" >&2; exit 2; }

# this python: $PYTHON, else the project's .venv (deploy/setup.sh; activated or not), else python3 on the PATH
python="${PYTHON:-}"
[[ -n "$python" || ! -x "$here/.venv/bin/python" ]] || python="$here/.venv/bin/python"
[[ -n "$python" ]] || python="$(command -v python3)"
submit="${SPARK_SUBMIT:-$(command -v spark-submit || true)}"
[[ -n "$submit" ]] || submit="$("$python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit"))')"

code="$dist/spark_topics_code.zip"
[[ -n "$env_archive" ]] || env_archive="$dist/spark_topics_env.tar.gz"
if [[ $print_only == 0 ]]; then
  if [[ $use_env == 1 && "$env_archive" == "$dist/spark_topics_env.tar.gz" ]]; then
    PYTHON="$python" "$here/deploy/package.sh" --with-env >&2      # the code zip too; the env when stale
  elif [[ ! -f "$code" ]] || [[ -n "$(find "$here/jobs" "$here/inference" "$here/drivers" "$here/partitioners" -name '*.py' -newer "$code" | head -1)" ]]; then
    PYTHON="$python" "$here/deploy/package.sh" >&2
  fi
  [[ $use_env == 0 || -f "$env_archive" ]] || { echo "no env archive at $env_archive" >&2; exit 2; }
fi

# Unix domain sockets between the JVM and the Python workers (see jobs/spark.py UDS_KEY); a later
# --spark-arg --conf=spark.python.unix.domain.socket.enabled=false overrides it.
args=(--master "$master")
[[ $deploy_mode == client ]] || args+=(--deploy-mode cluster)
args+=(--py-files "$code")
if [[ $deploy_mode == client ]]; then
  # the driver runs here: this python (it has the project's dependencies)
  args+=(--conf spark.pyspark.driver.python="$python")
else
  # the driver runs on a cluster node: a path of this machine means nothing there, and a
  # PYSPARK_DRIVER_PYTHON of this shell would be copied to a YARN driver's environment
  unset PYSPARK_DRIVER_PYTHON
fi
if [[ $use_env == 1 ]]; then
  args+=(--archives "$env_archive#environment" --conf spark.pyspark.python=./environment/bin/python)
elif [[ $deploy_mode == client ]]; then
  args+=(--conf spark.pyspark.python="${PYSPARK_PYTHON:-$python}")
elif [[ -n "${PYSPARK_PYTHON:-}" ]]; then
  args+=(--conf spark.pyspark.python="$PYSPARK_PYTHON")
fi
args+=(--conf spark.python.unix.domain.socket.enabled=true)
own_daemon=1      # a --spark-arg setting the executors' PYTHONPATH or daemon keeps PySpark's daemon
for arg in ${spark_args[@]+"${spark_args[@]}"}; do
  [[ "$arg" == *spark.executorEnv.PYTHONPATH=* || "$arg" == *spark.python.daemon.module=* ]] && own_daemon=0
done
if [[ $master == local* ]]; then
  # local mode: the Python daemon runs on this machine, so it can import the code zip. jobs/quiet_daemon.py
  # keeps the workers the JVM retires (idle for a minute, or at the end) from printing BrokenPipeError
  # tracebacks into the job's output, and forks them warm.
  # The JVM compiles with C1 only (jobs/spark.py LOCAL_JIT: a local job's CPU about 40% lower) and maps the
  # class archive deploy/setup.sh recorded beside the Python (jobs/jvm_classes.py: half the JVM's start-up CPU);
  # a --spark-arg --conf=spark.driver.extraJavaOptions=... of yours comes later and replaces both.
  java_opts="-XX:TieredStopAtLevel=1"
  archive="$(cd "$(dirname "$python")/.." 2>/dev/null && pwd)/spark-topics-jvm-classes.jsa"
  if [[ -f "$archive" && "$archive" != *" "* && ! "${SPARK_TOPICS_JVM_ARCHIVE:-}" =~ ^(off|0|false)$ ]]; then
    java_opts+=" -XX:SharedArchiveFile=$archive -Xlog:cds=off -Xlog:cds+dynamic=off"
  fi
  [[ $own_daemon == 0 ]] || args+=(--conf spark.executorEnv.PYTHONPATH="$code"
                                   --conf spark.python.daemon.module=jobs.quiet_daemon)
  args+=(--conf "spark.driver.extraJavaOptions=$java_opts")
elif [[ $master == spark://* && $own_daemon == 1 ]]; then
  # a standalone cluster: an executor fetches the code zip into its own folder before its first Python task
  # starts the daemon there, so the daemon imports jobs/quiet_daemon.py from ./spark_topics_code.zip: workers
  # forked warm, the imports frozen out of the collection PySpark's daemon runs after every task
  # (tests/deploy/test_packed_env.py runs it with the packed env, whose python has no project installed)
  args+=(--conf spark.executorEnv.PYTHONPATH="$(basename "$code")" --conf spark.python.daemon.module=jobs.quiet_daemon)
fi
command=("$submit" "${args[@]}" ${spark_args[@]+"${spark_args[@]}"} "$here/jobs/$job.py" "$@")
if [[ $print_only == 1 ]]; then
  printf '%q ' "${command[@]}" | sed 's/ $//'
  echo
  exit 0
fi
exec "${command[@]}"
