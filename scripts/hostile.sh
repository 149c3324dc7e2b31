#!/usr/bin/env bash
# The hostile scenarios of SPEC §10, measured (never asserted in tests): each scenario of
# tests/integration/support/hostile.rs runs as `examples/hostile.rs` on 127.0.0.1, and the
# release binary scans it (`--rate 10`); printed per scenario: exit code, outcome, requests,
# wall time and peak RSS (GNU time), against the budget (30 s, 100 MB).
# Usage: scripts/hostile.sh [MCPPROBE_BINARY] [SCENARIO…]    (default: the release build, every
# scenario). Output: a table on stdout; `HOSTILE_TSV=FILE` also writes it as tab-separated values.
# Exit 1 when a scan crashed or hung (an exit other than 0, 1, 3); a scenario over the 30 s / 100 MB
# budget is marked OVER, and fails the script only with HOSTILE_STRICT=1.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${CARGO_TARGET_DIR:-target}
bin=$out/release/mcpprobe
if [ $# -gt 0 ] && [ -f "$1" ] && [ -x "$1" ]; then bin=$1; shift; fi
if [ "$bin" = "$out/release/mcpprobe" ]; then
  cargo build --release --quiet --bin mcpprobe --example hostile
else
  cargo build --release --quiet --example hostile
fi
server=$out/release/examples/hostile
[ -x /usr/bin/time ] || { echo "needs GNU time (/usr/bin/time)" >&2; exit 1; }
work=$(mktemp -d)
cleanup() {
  [ -n "${fifo_pid:-}" ] && kill "$fifo_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
if [ $# -gt 0 ]; then scenarios=("$@"); else mapfile -t scenarios < <("$server" --list); fi
tsv=${HOSTILE_TSV:-/dev/null}
printf '%-22s %4s %-10s %5s %8s %9s  %s\n' scenario exit outcome reqs wall_s peak_MB budget
printf 'scenario\texit\toutcome\trequests\twall_s\tpeak_mb\n' >"$tsv"
fail=0
for s in "${scenarios[@]}"; do
  mkfifo "$work/in"
  # The server lives until its stdin (the fifo) closes.
  "$server" "$s" <"$work/in" >"$work/url" 2>"$work/server.log" &
  srv=$!
  exec 3>"$work/in"
  for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.05; done
  url=$(head -n1 "$work/url")
  state=$(mktemp -d -p "$work")
  set +e
  MCPPROBE_STATE_DIR=$state /usr/bin/time -v -o "$work/time" \
    timeout 120 "$bin" scan "$url" --rate 10 --format json >"$work/report.json" 2>/dev/null
  code=$?
  set -e
  exec 3>&-
  wait "$srv" 2>/dev/null || true
  rm -f "$work/in"
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; printf "%.1f", s}' "$work/time")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2/1024}' "$work/time")
  read -r outcome reqs < <(python3 -c 'import json,sys
try:
    r=json.load(open(sys.argv[1])); print(r.get("outcome","?"), r.get("requests_sent","?"))
except Exception: print("no-report ?")' "$work/report.json")
  verdict=ok
  if awk -v w="$wall" -v m="$rss" 'BEGIN{exit !(w>30 || m>100)}'; then
    verdict=OVER
    [ "${HOSTILE_STRICT:-0}" = 1 ] && fail=1
  fi
  case $code in 0|1|3) ;; *) verdict="BAD EXIT"; fail=1 ;; esac
  printf '%-22s %4s %-10s %5s %8s %9s  %s\n' "$s" "$code" "$outcome" "$reqs" "$wall" "$rss" "$verdict"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$code" "$outcome" "$reqs" "$wall" "$rss" >>"$tsv"
done
exit $fail
