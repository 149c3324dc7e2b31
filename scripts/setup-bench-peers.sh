#!/usr/bin/env bash
# Installs the peer scanners that scripts/bench.sh measures mcpprobe beside, pinned, into .peers/
# (git-ignored): cisco-ai-mcp-scanner and tool-scan from PyPI (venv .peers/bench), mcpmap from
# crates.io (.peers/cargo/bin). Idempotent. Not needed by the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .peers
peers=$(pwd)/.peers
py_marker="$peers/.bench-cisco-4.8.7-toolscan-1.1.0"
if [ ! -f "$py_marker" ]; then
  python3 -m venv "$peers/bench"
  "$peers/bench/bin/pip" install --quiet --disable-pip-version-check \
    cisco-ai-mcp-scanner==4.8.7 tool-scan==1.1.0
  touch "$py_marker"
fi
if [ ! -x "$peers/cargo/bin/mcpmap" ]; then
  CARGO_TARGET_DIR="$peers/cargo-target" cargo install --locked --quiet --root "$peers/cargo" \
    mcpmap --version "${MCPMAP_VERSION:-0.1.1}"
  rm -rf "$peers/cargo-target"
fi
echo "setup-bench-peers: ready in $peers"
