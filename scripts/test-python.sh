#!/usr/bin/env bash
# The Python package's tests (SPEC §12): a venv in .peers/pyapi with maturin, pytest and mypy
# from PyPI, the package built into it from python/ (`maturin develop`, the dev profile, so it
# reuses what `cargo test` compiled), then pytest over python/tests against the CLI binary that
# `cargo build` brings up to date. pytest's exit 5 (no tests collected) is a failure like any other.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(pwd)/.peers/pyapi
reqs=(maturin==1.16.0 pytest==9.2.0 mypy==2.4.1)
marker="$venv/.ready-$(printf '%s\n' "${reqs[@]}" | sha256sum | cut -c1-12)"
if [ ! -f "$marker" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${reqs[@]}"
  touch "$marker"
fi
# Always build: a binary left from an older checkout would answer with old rules (cargo makes
# this a no-op when the binary is current).
cargo build --locked
VIRTUAL_ENV="$venv" "$venv/bin/maturin" develop --quiet --locked
status=0
MCPPROBE_BIN=$(pwd)/target/debug/mcpprobe "$venv/bin/python" -m pytest -q python/tests || status=$?
if [ "$status" -eq 5 ]; then
  echo "test-python: pytest collected no tests" >&2
fi
exit "$status"
