#!/bin/sh
# sandbox.sh SCRATCH COMMAND [ARGS...]: runs COMMAND so that it can write nowhere but SCRATCH
# (which must not be under /tmp) and reach no network but loopback, for the deliberately
# vulnerable servers the active tests drive: a buggy check, or a real flaw, stays inside.
#
# - its own mount namespace: every mount read-only but SCRATCH, a fresh /dev (null, zero,
#   random, urandom, nothing else), a fresh /proc of its own PID namespace, a private /tmp;
# - its own network namespace with only loopback (SANDBOX_NET=inherit keeps the caller's, for a
#   caller that is itself in a loopback-only one: the SSRF test runs mcpprobe there);
# - its own PID namespace (it sees and signals nothing outside);
# - no capabilities at all, and no way to gain one (no_new_privs): it cannot remount, enter
#   another namespace, or open a device beyond the four above.
# Needs root (unshare, mount, setpriv), as the tests do. The sandbox dies with this script.
set -eu
scratch=$(realpath "$1")
shift
case "$scratch" in /tmp|/tmp/*) echo "sandbox.sh: the scratch folder must not be under /tmp" >&2; exit 64;; esac
net=--net
if [ "${SANDBOX_NET:-}" = inherit ]; then net=; fi
# shellcheck disable=SC2086,SC2016 # $net is empty or one flag; the inner script is expanded by its own shell
exec unshare --mount $net --pid --fork --kill-child --mount-proc -- sh -eu -c '
  scratch=$1; shift
  mount --make-rprivate /
  # The scratch folder becomes a mount of its own, left writable.
  mount --bind "$scratch" "$scratch"
  # A private /tmp first (nothing made below touches the host), then a fresh /dev with the
  # four harmless devices only, built in it and moved into place.
  mount -t tmpfs -o size=16m,mode=1777 tmpfs /tmp
  dev=/tmp/.sandbox-dev
  mkdir "$dev"
  mount -t tmpfs -o size=1m,mode=755 tmpfs "$dev"
  for d in null zero random urandom; do touch "$dev/$d"; mount --bind "/dev/$d" "$dev/$d"; done
  mount --move "$dev" /dev
  rmdir "$dev"
  # Every other mount read-only (mountinfo escapes spaces and the like as \ooo).
  awk "{print \$5}" /proc/self/mountinfo | sort -u | while read -r m; do
    m=$(printf "%b" "$m")
    case "$m" in "$scratch"|/dev|/dev/*|/proc|/proc/*|/tmp) continue;; esac
    mount -o remount,bind,ro "$m" || { echo "sandbox.sh: cannot make $m read-only" >&2; exit 70; }
  done
  ip link set lo up 2>/dev/null || true
  cd "$scratch"
  exec setpriv --no-new-privs --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- "$@"
' sandbox "$scratch" "$@"
