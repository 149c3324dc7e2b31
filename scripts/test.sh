#!/usr/bin/env bash
# The test command: installs the real MCP SDK servers the tests scan (npm and PyPI, into .peers/,
# skipped when already there), then runs the whole suite. Needs root (the tests create a network
# namespace), iproute2, python3 (with venv) and node, as CI has.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-peers.sh
scripts/setup-postgres.sh   # initdb and pg_ctl for the store and fleet tests (Debian's postgresql)
cargo test --locked "$@"
scripts/test-python.sh   # the Python package (maturin, pytest), against the binary just built
