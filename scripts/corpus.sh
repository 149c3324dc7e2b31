#!/usr/bin/env bash
# The metadata rules against published attacks (SPEC §3.2): runs the corpus test over
# ../shared/corpus/wild-dev/ and prints, per source and per family, poisoned files detected and
# benign tools flagged (META-02 P1–P5), then every miss and every flagged tool.
# Usage: scripts/corpus.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(cargo test --quiet --test integration corpus:: -- --nocapture 2>&1) || status=$?
printf '%s\n' "$out" | sed -n '/^corpus wild-dev:/,/^total:/p;/^  miss:/p;/^  flagged:/p'
exit "${status:-0}"
