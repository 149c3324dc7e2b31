#!/usr/bin/env bash
# Regenerates the man pages in doc/ from the clap definitions (a test fails when they are stale).
set -euo pipefail
cd "$(dirname "$0")/.."
rm -f doc/*.1
cargo run --quiet --locked -- manpages doc
ls doc/*.1
