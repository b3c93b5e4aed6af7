#!/usr/bin/env bash
# One command from a fresh clone: set up, prepare the sample corpus, train LDA (local mode), show topics.
#   deploy/quickstart.sh [K] [ITERATIONS]      (outputs in out/sample_corpus and out/sample_model)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"
deploy/setup.sh
K="${1:-20}"
N="${2:-30}"
.venv/bin/spark-topics prepare --input sample_data/web_chapters.jsonl.gz --output out/sample_corpus --overwrite
.venv/bin/spark-topics train --model lda --corpus out/sample_corpus --topics "$K" --iterations "$N" \
  --seed 1 --output out/sample_model
echo "objective per iteration (hybrid inference: the mean log joint; README \"Why this default\"): out/sample_model/elbo.png"
