#!/usr/bin/env bash
# A/B two commits of spark-topics on one prepared corpus: the same `train` runs, alternating, same interpreter.
#   tests/bench/ab_commits.sh REV_A REV_B [CORPUS_DIR] [ROUNDS]
# Prints, per run, the median seconds per iteration (after the first two) and the final ELBO / log p(w|z) of
# LDA (variational, K=20, 12 iterations) and LDA-Gibbs (K=20, 40 iterations): a refactor must keep the numbers
# and should keep the seconds. CORPUS_DIR defaults to out/sample_corpus (deploy/quickstart.sh writes it).
# With AB_CGROUP=/sys/fs/cgroup/cpuacct/NAME (a cpuacct cgroup this user may write) the script moves itself into
# it and also prints each train's CPU seconds (the driver's, the Spark JVM's and the Python workers': what the
# cgroup's cpuacct.usage counts), the measure that means something on a shared, loaded host.
set -euo pipefail
cpu_ns() { if [[ -n "${AB_CGROUP:-}" ]]; then cat "$AB_CGROUP/cpuacct.usage"; else echo 0; fi; }
if [[ -n "${AB_CGROUP:-}" ]]; then echo $$ > "$AB_CGROUP/cgroup.procs"; fi
here="$(cd "$(dirname "$0")/../.." && pwd)"
a="$1"; b="$2"; corpus="$(realpath "${3:-$here/out/sample_corpus}")"; rounds="${4:-2}"
py="$here/.venv/bin/python"
work="$(mktemp -d)"
trap 'git -C "$here" worktree remove --force "$work/a" >/dev/null 2>&1 || true;
      git -C "$here" worktree remove --force "$work/b" >/dev/null 2>&1 || true' EXIT
git -C "$here" worktree add -q --detach "$work/a" "$a"
git -C "$here" worktree add -q --detach "$work/b" "$b"
for round in $(seq "$rounds"); do
  for side in a b; do
    root="$work/$side"; out="$work/out-$side-$round"
    for model in "lda --inference variational --iterations 12 --tol 0" "lda-gibbs --iterations 40"; do
      name="${model%% *}"
      before=$(cpu_ns)
      (cd "$root" && PYTHONPATH="$root" SPARK_TOPICS_SPARK_LOG_LEVEL=ERROR "$py" -m jobs.cli train --model $model \
        --corpus "$corpus" --output "$out/$name" --topics 20 --seed 1 --master 'local[2]' > "$out.$name.log" 2>&1)
      echo $(( $(cpu_ns) - before )) > "$out.$name.cpu_ns"
    done
    "$py" - "$out" "$side=$( [[ $side == a ]] && echo "$a" || echo "$b")" "$round" <<'PY'
import json, sys
import numpy as np
out, label, rnd = sys.argv[1:4]
lda = json.load(open(f"{out}/lda/model.json"))
gibbs = json.load(open(f"{out}/lda-gibbs/model.json"))
s_lda = np.median([r["seconds"] for r in lda["elbo_trace"]][2:])
s_gibbs = np.median([r["seconds"] for r in gibbs["trace"]][2:])
cpu = {name: int(open(f"{out}.{name}.cpu_ns").read()) / 1e9 for name in ("lda", "lda-gibbs")}
cpu_text = {name: f" {seconds:.1f} CPU s" if seconds else "" for name, seconds in cpu.items()}
print(f"round {rnd} {label:<20} lda {s_lda:.3f} s/it{cpu_text['lda']} ELBO {lda['elbo']:.10e} | "
      f"lda-gibbs {s_gibbs:.3f} s/it{cpu_text['lda-gibbs']} log p(w|z) {gibbs['loglik']:.10e}", flush=True)
PY
  done
done
