#!/usr/bin/env bash
# Package spark-topics for Spark executors.
#
#   deploy/package.sh            -> dist/spark_topics_code.zip   (the project's code, for --py-files)
#   deploy/package.sh --with-env -> also dist/spark_topics_env.tar.gz, a packed virtual environment
#                                   with numpy, scipy, numba, pyarrow, pandas and the project, for
#                                   clusters whose nodes lack them (--archives ...#env)
#
# deploy/submit.sh calls this when the packages are missing or older than the code.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dist="${SPARK_TOPICS_DIST:-$here/dist}"
python="${PYTHON:-python3}"
mkdir -p "$dist"

"$python" - "$here" "$dist/spark_topics_code.zip" <<'PY'
import os, sys, zipfile
root, target = sys.argv[1], sys.argv[2]
tmp = target + ".tmp"
with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
    for package in ("jobs", "inference", "drivers", "partitioners"):
        for folder, dirs, files in os.walk(os.path.join(root, package)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".py", ".txt")):
                    path = os.path.join(folder, name)
                    info = zipfile.ZipInfo(os.path.relpath(path, root), date_time=(2020, 1, 1, 0, 0, 0))
                    info.compress_type = zipfile.ZIP_DEFLATED
                    with open(path, "rb") as f:
                        zf.writestr(info, f.read())
os.replace(tmp, target)
print(f"wrote {target}")
PY

if [[ "${1:-}" == "--with-env" ]]; then
  env_dir="$dist/env-build"
  rm -rf "$env_dir"
  "$python" -m venv "$env_dir"
  "$env_dir/bin/pip" install -q --upgrade pip venv-pack
  # pyspark itself comes from the cluster's Spark installation; everything else travels.
  "$env_dir/bin/pip" install -q "numpy>=1.26" "scipy>=1.11" "pyarrow>=15" "pandas>=2.0,<3" "numba>=0.59"
  "$env_dir/bin/pip" install -q --no-deps "$here"
  "$env_dir/bin/venv-pack" -p "$env_dir" -o "$dist/spark_topics_env.tar.gz" -f
  echo "wrote $dist/spark_topics_env.tar.gz"
fi
