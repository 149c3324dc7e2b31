#!/usr/bin/env bash
# Installs Debian's chromium (/usr/bin/chromium) for the web page's headless-browser tests
# (tests/integration/support/browser.rs). Idempotent: nothing happens when it is there.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  echo "setup-browser: $(/usr/bin/chromium --version 2>/dev/null || echo chromium) ready"
  exit 0
fi
command -v apt-get >/dev/null || { echo "setup-browser: apt-get is needed to install chromium" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq chromium >/dev/null 2>&1 || {
  apt-get update -qq && apt-get install -y -qq chromium >/dev/null
}
[ -x /usr/bin/chromium ] || { echo "setup-browser: chromium did not install" >&2; exit 1; }
echo "setup-browser: $(/usr/bin/chromium --version 2>/dev/null || echo chromium) installed"
