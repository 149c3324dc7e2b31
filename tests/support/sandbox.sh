#!/bin/sh
# sandbox.sh SCRATCH COMMAND [ARGS...]: runs COMMAND with the whole file system read-only except
# SCRATCH (which must not be under /tmp) and a private, empty /tmp, in a network namespace of its
# own with only loopback. For the deliberately vulnerable servers the active tests drive: a buggy
# check (or a real flaw) can write nowhere but the scratch folder and reach nothing on the network.
# Needs root (unshare, mount, ip), as the tests do. The sandbox dies with this script.
# SANDBOX_NET=inherit keeps the caller's network namespace: for a caller that is itself in a
# loopback-only one (the SSRF test runs mcpprobe there, so the server can reach its listener).
set -eu
scratch=$(realpath "$1")
shift
case "$scratch" in /tmp|/tmp/*) echo "sandbox.sh: the scratch folder must not be under /tmp" >&2; exit 64;; esac
net=--net
if [ "${SANDBOX_NET:-}" = inherit ]; then net=; fi
# shellcheck disable=SC2086,SC2016 # $net is empty or one flag; the inner script is expanded by its own shell
exec unshare --mount $net --fork --kill-child -- sh -eu -c '
  scratch=$1; shift
  mount --make-rprivate /
  # The scratch folder becomes a mount of its own, left writable.
  mount --bind "$scratch" "$scratch"
  # Every other mount read-only (/dev aside: device nodes, not storage).
  awk "{print \$5}" /proc/self/mountinfo | sort -u | while read -r m; do
    case "$m" in "$scratch"|/dev) continue;; esac
    mount -o remount,bind,ro "$m" 2>/dev/null || true
  done
  mount -t tmpfs -o size=16m,mode=1777 tmpfs /tmp
  ip link set lo up 2>/dev/null || true
  cd "$scratch"
  exec "$@"
' sandbox "$scratch" "$@"
