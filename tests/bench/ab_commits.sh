#!/usr/bin/env bash
# A/B two commits of spark-topics on one prepared corpus: the same `train` runs, alternating, same interpreter.
#   tests/bench/ab_commits.sh REV_A REV_B [CORPUS_DIR] [ROUNDS]
# Prints, per run, the median seconds per iteration (after the first two) and the final ELBO / log p(w|z) of
# LDA (variational, K=20, 12 iterations) and LDA-Gibbs (K=20, 40 iterations): a refactor must keep the numbers
# and should keep the seconds. CORPUS_DIR defaults to out/sample_corpus (deploy/quickstart.sh writes it).
set -euo pipefail
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
      (cd "$root" && PYTHONPATH="$root" SPARK_TOPICS_SPARK_LOG_LEVEL=ERROR "$py" -m jobs.cli train --model $model \
        --corpus "$corpus" --output "$out/$name" --topics 20 --seed 1 --master 'local[2]' > "$out.$name.log" 2>&1)
    done
    "$py" - "$out" "$side=$( [[ $side == a ]] && echo "$a" || echo "$b")" "$round" <<'PY'
import json, sys
import numpy as np
out, label, rnd = sys.argv[1:4]
lda = json.load(open(f"{out}/lda/model.json"))
gibbs = json.load(open(f"{out}/lda-gibbs/model.json"))
s_lda = np.median([r["seconds"] for r in lda["elbo_trace"]][2:])
s_gibbs = np.median([r["seconds"] for r in gibbs["trace"]][2:])
print(f"round {rnd} {label:<20} lda {s_lda:.3f} s/it ELBO {lda['elbo']:.10e} | "
      f"lda-gibbs {s_gibbs:.3f} s/it log p(w|z) {gibbs['loglik']:.10e}", flush=True)
PY
  done
done
