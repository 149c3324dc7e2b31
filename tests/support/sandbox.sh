#!/bin/sh
# sandbox.sh SCRATCH COMMAND [ARGS...]: runs COMMAND so that it can write nowhere but SCRATCH
# and reach no network but loopback, for the deliberately vulnerable servers the active tests
# drive: a buggy check, or a real flaw, stays inside.
#
# - its own mount namespace: every mount read-only but SCRATCH, a fresh /dev (null, zero,
#   random, urandom, nothing else), a fresh /proc of its own PID namespace, a private /tmp;
#   a SCRATCH under /tmp (a clone of the repository there) is bound back in after the private
#   /tmp is mounted, read-write, and so is this repository (its fixtures, .peers/), read-only;
#   a path may hold spaces;
# - its own network namespace with only loopback (SANDBOX_NET=inherit keeps the caller's, for a
#   caller that is itself in a loopback-only one: the SSRF test runs mcpprobe there);
# - its own PID namespace (it sees and signals nothing outside);
# - no capabilities at all, and no way to gain one (no_new_privs): it cannot remount, enter
#   another namespace, or open a device beyond the four above.
# Needs root (unshare, mount, setpriv), as the tests do. The sandbox dies with this script.
set -eu
scratch=$(realpath "$1")
shift
repo=$(realpath "$(dirname "$0")/../..")
case "$scratch" in /tmp) echo "sandbox.sh: the scratch folder cannot be /tmp itself (the sandbox has its own)" >&2; exit 64;; esac
# mountinfo escapes a space and the like as \ooo; printf %b reads \0ooo (a \040 followed by a
# digit would be read as one wrong character), so each escape gets its 0 first.
unoct='s/\\\([0-7][0-7][0-7]\)/\\0\1/g'
net=--net
if [ "${SANDBOX_NET:-}" = inherit ]; then net=; fi
# shellcheck disable=SC2086,SC2016 # $net is empty or one flag; the inner script is expanded by its own shell
exec unshare --mount $net --pid --fork --kill-child --mount-proc -- sh -eu -c '
  scratch=$1; repo=$2; unoct=$3; shift 3
  mount --make-rprivate /
  # The scratch folder becomes a mount of its own, left writable.
  mount --bind "$scratch" "$scratch"
  # Held open across the private /tmp below, which hides whatever of them lies under /tmp.
  exec 3<"$scratch" 4<"$repo"
  # A private /tmp first (nothing made below touches the host), then a fresh /dev with the
  # four harmless devices only, built in it and moved into place.
  mount -t tmpfs -o size=16m,mode=1777 tmpfs /tmp
  # Under /tmp: bound back at their own paths from the descriptors (not by name, which now
  # resolves in the private /tmp; mount must not canonicalise it either). The repository
  # first (it may hold the scratch folder), made read-only with every other mount below.
  case "$repo" in /tmp/*) mkdir -p "$repo"; mount --no-canonicalize --bind /proc/self/fd/4 "$repo";; esac
  case "$scratch" in /tmp/*) mkdir -p "$scratch"; mount --no-canonicalize --bind /proc/self/fd/3 "$scratch";; esac
  exec 3<&- 4<&-
  dev=/tmp/.sandbox-dev
  mkdir "$dev"
  mount -t tmpfs -o size=1m,mode=755 tmpfs "$dev"
  for d in null zero random urandom; do touch "$dev/$d"; mount --bind "/dev/$d" "$dev/$d"; done
  mount --move "$dev" /dev
  rmdir "$dev"
  # Every other mount read-only.
  awk "{print \$5}" /proc/self/mountinfo | sort -u | while read -r m; do
    m=$(printf "%b" "$(printf "%s" "$m" | sed "$unoct")")
    case "$m" in "$scratch"|/dev|/dev/*|/proc|/proc/*|/tmp) continue;; esac
    mount -o remount,bind,ro "$m" || { echo "sandbox.sh: cannot make $m read-only" >&2; exit 70; }
  done
  ip link set lo up 2>/dev/null || true
  cd "$scratch"
  exec setpriv --no-new-privs --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- "$@"
' sandbox "$scratch" "$repo" "$unoct" "$@"
