#!/usr/bin/env bash
# What the deploy and tree tests need beyond .venv (called by `deploy/setup.sh test`; idempotent):
#   * Debian's FreeDict dictionaries (dict-freedict-eng-spa, dict-freedict-spa-eng), read by the tree job's test
#     of the files as Debian installs them, and Debian's chromium, the headless browser of the browse job's page
#     test (tests/commands/test_browse.py): apt-get as root, or through password-less sudo;
#   * .venv-airflow: Airflow 3, its Spark provider and ruff (deploy/airflow/requirements.txt, pinned further by
#     constraints-<python>.txt when there is one), for the DagBag and ruff tests of deploy/airflow/. Installed
#     with uv (pip takes minutes to resolve Airflow), rebuilt only when those files or the Python change.
# A step that cannot be done prints a warning and the tests that need it fail under deploy/run-tests.sh
# (SPARK_TOPICS_FULL_RUN=1), naming what is missing; under a bare pytest they are skipped.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"
python="${1:-${PYTHON:-python3}}"

# ------------------------------------------------------------------------------------- FreeDict, chromium
dictionaries=(/usr/share/dictd/freedict-eng-spa.index /usr/share/dictd/freedict-spa-eng.index)
packages=()
ls "${dictionaries[@]}" >/dev/null 2>&1 || packages+=(dict-freedict-eng-spa dict-freedict-spa-eng)
command -v chromium >/dev/null 2>&1 || packages+=(chromium fonts-dejavu-core)   # a font for the page's text
if (( ${#packages[@]} )); then
  sudo=()
  if [[ $(id -u) != 0 ]]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo=(sudo -n); else sudo=(none); fi
  fi
  if [[ "${sudo[*]}" == none ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "warning: cannot install Debian's ${packages[*]} (needs apt-get as root" \
         "or password-less sudo): the FreeDict test of the tree job or the browse page test cannot run" >&2
  else
    echo "installing ${packages[*]} (Debian)" >&2
    export DEBIAN_FRONTEND=noninteractive
    { "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null 2>&1 \
      || { "${sudo[@]}" apt-get update -qq >/dev/null && \
           "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null; }; } \
      || echo "warning: apt-get could not install ${packages[*]}" >&2
  fi
fi

# ----------------------------------------------------------------------------------------- .venv-airflow
venv=.venv-airflow
version="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
requirements=deploy/airflow/requirements.txt
constraints="deploy/airflow/constraints-$version.txt"
stamp_of() { { "$python" -c 'import sys; print(sys.version)'; cat "$requirements"; [[ -f $constraints ]] && cat "$constraints"; } | sha256sum | cut -d' ' -f1; }
stamp="$(stamp_of)"
exec 9>"$here/.venv-airflow.lock"
flock 9   # two setups at once: the second waits, then finds the environment built
if [[ "$(cat "$venv/spark-topics.stamp" 2>/dev/null)" != "$stamp" ]]; then
  echo "building $venv (Airflow, its Spark provider, ruff: $requirements) with uv" >&2
  start=$SECONDS
  .venv/bin/python -m pip install -q "uv>=0.5,<1"
  rm -rf "$venv"
  args=(-r "$requirements")
  [[ -f $constraints ]] && args+=(-c "$constraints")
  if .venv/bin/python -m uv venv -q --python "$python" "$venv" \
     && .venv/bin/python -m uv pip install -q --compile-bytecode --python "$venv/bin/python" "${args[@]}"; then
    echo "$stamp" > "$venv/spark-topics.stamp"   # last: a killed build is redone
    echo "built $venv in $((SECONDS - start)) s" >&2
  else
    echo "warning: could not build $venv: the Airflow DagBag and ruff tests cannot run" >&2
  fi
fi
