#!/usr/bin/env bash
# The fleet (issue 25), on a temporary cluster of Debian's PostgreSQL server as the tests start it:
# - the store with a long history: 100,000 runs in SQLite and in PostgreSQL, the latency of what
#   /targets and a target's run list read (median, p99, worst of 100), and retention back to its
#   bound (examples/history.rs);
# - scans per minute of 1, 2 and 4 real daemons on 30 loopback hosts against what the per-host
#   rate allows, and one daemon's peak memory with 10,000 targets (examples/fleet.rs).
# Figures in README. About 12 minutes; `scripts/bench-fleet.sh fleet` runs the fleet alone (5).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-postgres.sh
cargo build --release --locked --example history --example fleet --bin mcpprobe
only=${1:-}   # `fleet`: the fleet of daemons only
if [ "$only" != fleet ]; then
  echo "== SQLite"
  target/release/examples/history
fi
bin=$(dirname "$(printf '%s\n' /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")
dir=$(mktemp -d)
user=postgres
id "$user" >/dev/null 2>&1 || user=nobody
chown "$user" "$dir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
as_user() { if [ "$(id -u)" -eq 0 ]; then runuser -u "$user" -- "$@"; else "$@"; fi; }
as_user "$bin/initdb" -D "$dir/data" -U mcpprobe -A trust -E UTF8 --locale=C --no-sync >/dev/null
trap 'as_user "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
as_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -o "-p $port -k $dir -c listen_addresses=127.0.0.1" start >/dev/null
if [ "$only" != fleet ]; then
  as_user "$bin/createdb" -h 127.0.0.1 -p "$port" -U mcpprobe history
  echo "== PostgreSQL $("$bin/postgres" --version | awk '{print $3}')"
  target/release/examples/history --postgres "postgres://mcpprobe@127.0.0.1:$port/history"
fi
for db in fleet1 fleet2 fleet4 fleet10k; do
  as_user "$bin/createdb" -h 127.0.0.1 -p "$port" -U mcpprobe "$db"
done
echo "== A fleet of daemons"
target/release/examples/fleet "postgres://mcpprobe@127.0.0.1:$port/" target/release/mcpprobe
