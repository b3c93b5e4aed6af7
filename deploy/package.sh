#!/usr/bin/env bash
# Package spark-topics for Spark executors (and, in cluster mode, the driver).
#
#   deploy/package.sh                 -> dist/spark_topics_code.zip   (the project's code, for --py-files)
#   deploy/package.sh --with-env      -> also dist/spark_topics_env.tar.gz, a packed virtual environment
#                                        (venv-pack) with the project's dependencies from pyproject.toml
#                                        except pyspark (numpy, scipy, numba, pyarrow, pandas, matplotlib),
#                                        for clusters whose nodes lack them: --archives ...#environment and
#                                        PYSPARK_PYTHON=./environment/bin/python (deploy/submit.sh --env,
#                                        deploy/submit-yarn.sh)
#   deploy/package.sh --rebuild-env   -> the same, rebuilt even when up to date
#   --python-prefix PREFIX            -> the packed env's python links to PREFIX/bin/python (venv-pack's
#                                        option) instead of this machine's interpreter
#
# The env does not contain the project's code (that is the zip, shipped with --py-files and rebuilt whenever
# the code changes), so it is rebuilt only when it is missing or its fingerprint changed: the base interpreter
# (path and version), the dependency list in pyproject.toml and --python-prefix (dist/spark_topics_env.json).
# venv-pack does not copy the interpreter, it links to it: every node must have the same Python at the same
# path (or at --python-prefix).
#
# deploy/submit.sh calls this when the code zip is missing or older than the code; deploy/setup.sh test
# builds the env once for the test suite. Concurrent builds of the same dist/ wait for each other (flock).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dist="${SPARK_TOPICS_DIST:-$here/dist}"
python="${PYTHON:-python3}"
with_env=0
rebuild=0
python_prefix=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --with-env) with_env=1; shift ;;
    --rebuild-env) with_env=1; rebuild=1; shift ;;
    --python-prefix) python_prefix="$2"; shift 2 ;;
    *) echo "deploy/package.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
mkdir -p "$dist"

"$python" - "$here" "$dist/spark_topics_code.zip" <<'PY'
import os, sys, tempfile, zipfile
root, target = sys.argv[1], sys.argv[2]
fd, tmp = tempfile.mkstemp(prefix=".spark_topics_code.", suffix=".zip", dir=os.path.dirname(target))
os.close(fd)
with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
    for package in ("jobs", "inference", "drivers", "partitioners"):
        for folder, dirs, files in os.walk(os.path.join(root, package)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            if any(n.endswith(".py") for n in files) and "__init__.py" not in files:
                # a namespace package: zipimport finds only regular packages in a zip
                info = zipfile.ZipInfo(os.path.join(os.path.relpath(folder, root), "__init__.py"),
                                       date_time=(2020, 1, 1, 0, 0, 0))
                zf.writestr(info, b"")
            for name in sorted(files):
                if name.endswith((".py", ".txt")):
                    path = os.path.join(folder, name)
                    info = zipfile.ZipInfo(os.path.relpath(path, root), date_time=(2020, 1, 1, 0, 0, 0))
                    info.compress_type = zipfile.ZIP_DEFLATED
                    with open(path, "rb") as f:
                        zf.writestr(info, f.read())
os.chmod(tmp, 0o644)
os.replace(tmp, target)
print(f"wrote {target}")
PY

[[ $with_env == 1 ]] || exit 0

archive="$dist/spark_topics_env.tar.gz"
stamp="$dist/spark_topics_env.json"
# the fingerprint and the requirements (pyproject's dependencies without pyspark, which the cluster's Spark
# installation provides: PYTHONPATH of every Python worker has its pyspark.zip and py4j)
fingerprint="$("$python" - "$here/pyproject.toml" "$python_prefix" <<'PY'
import hashlib, json, os, platform, re, sys
try:
    import tomllib
except ImportError:                      # Python 3.10
    from pip._vendor import tomli as tomllib
with open(sys.argv[1], "rb") as f:
    deps = tomllib.load(f)["project"]["dependencies"]
requirements = [d for d in deps if re.split(r"[\s<>=!~;\[]", d, maxsplit=1)[0].lower() != "pyspark"]
base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
key = {"format": 3, "python": base, "version": platform.python_version(), "requirements": requirements,
       "python_prefix": sys.argv[2]}
key["fingerprint"] = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
print(json.dumps(key, sort_keys=True))
PY
)"
fresh() {
  [[ -f "$archive" && -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$fingerprint" ]]
}

build_env() {
  if [[ $rebuild == 0 ]] && fresh; then
    echo "$archive is up to date"
    return
  fi
  local env_dir="$dist/env-build"
  rm -rf "$env_dir" "$stamp"
  "$python" -m venv "$env_dir"
  "$env_dir/bin/python" -m pip install -q --disable-pip-version-check venv-pack
  local requirements=() requirement
  while IFS= read -r requirement; do requirements+=("$requirement"); done < <(
    "$python" -c 'import json, sys; print("\n".join(json.loads(sys.argv[1])["requirements"]))' "$fingerprint")
  "$env_dir/bin/python" -m pip install -q --disable-pip-version-check "${requirements[@]}"
  # left out: the packages' test suites (about 110 MB of 800), pip and venv-pack themselves
  local pack=("$env_dir/bin/venv-pack" -p "$env_dir" -o "$archive.tmp" --format tar.gz -f -q
              --exclude '*/tests/*' --exclude 'lib/python*/site-packages/pip/*'
              --exclude 'lib/python*/site-packages/venv_pack/*')
  [[ -z "$python_prefix" ]] || pack+=(--python-prefix "$python_prefix")
  "${pack[@]}"
  chmod 644 "$archive.tmp"
  mv -f "$archive.tmp" "$archive"
  printf '%s' "$fingerprint" > "$stamp"
  rm -rf "$env_dir"
  echo "wrote $archive"
}

if command -v flock >/dev/null 2>&1; then
  exec 9>"$dist/.env.lock"
  flock 9
fi
build_env
