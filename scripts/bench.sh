#!/usr/bin/env bash
# Benchmarks of SPEC §10 (measured here, never asserted in tests):
#   1. `mcpprobe check` throughput on a generated 10,000-tool tools/list (~20 MB), on one core;
#   2. `mcpprobe check` end to end on a one-tool file;
#   3. a full passive `mcpprobe demo` scan of the bundled reference server on loopback: requests
#      sent, and wall time against 1.3 × requests ÷ rate;
#   4. `mcpprobe diff` of a 10,000-tool list against the same list with every tool renamed
#      (10,000 renames found through the content-hash map of src/fingerprint.rs);
#   5. detection on published attacks (../shared/corpus/wild-dev/, scripts/corpus.sh): per source
#      and per family, poisoned files detected and benign tools flagged.
# Usage: scripts/bench.sh [RUNS=5] [all|diff]   (`diff` runs only benchmark 4)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
only=${2:-all}
cargo build --release --quiet
bin=target/release/mcpprobe
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 scripts/gen-bench-tools.py "$work/big.json" 10000
pin=()
command -v taskset >/dev/null && pin=(taskset -c 0)

# 4. The rename-everything diff: same content, every name changed.
python3 - "$work/big.json" "$work/renamed.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for t in doc["result"]["tools"]:
    t["name"] = "renamed_" + t["name"]
json.dump(doc, open(sys.argv[2], "w"), ensure_ascii=False)
PY
python3 - "$work" "$runs" "$bin" "${pin[@]}" <<'PY'
import json, os, statistics, subprocess, sys, time
work, runs, binary, pin = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
old, new = os.path.join(work, "big.json"), os.path.join(work, "renamed.json")
times = []
for _ in range(runs + 1):
    t = time.perf_counter()
    p = subprocess.run(pin + [binary, "diff", old, new, "--format", "json"], capture_output=True)
    times.append(time.perf_counter() - t)
    if p.returncode != 1:
        sys.exit(f"diff failed ({p.returncode}): {p.stderr.decode()}")
d = json.loads(p.stdout)
assert len(d["renamed"]) == 10000 and not d["added"] and not d["removed"], "not 10,000 renames"
med, best = statistics.median(times[1:]), min(times[1:])
print(f"diff 10,000 tools, every tool renamed ({len(d['renamed'])} renames found), 1 core: "
      f"median {med:.3f} s, best {best:.3f} s")
PY
[ "$only" = diff ] && exit 0

cp fixtures/real/pypi-mcp-server-fetch-2026.10.24.json "$work/one.json"
python3 - "$work" "$runs" "$bin" "${pin[@]}" <<'PY'
import os, statistics, subprocess, sys, time
work, runs, binary, pin = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
def bench(path, args):
    times = []
    for _ in range(runs + 1):
        t = time.perf_counter()
        p = subprocess.run(pin + [binary, "check", path, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - t)
        if p.returncode not in (0, 1):
            sys.exit(f"check failed ({p.returncode}): {p.stderr.decode()}")
    return statistics.median(times[1:]), min(times[1:])
big = os.path.join(work, "big.json")
size = os.path.getsize(big)
for fmt in ("json", "terminal"):
    med, best = bench(big, ["--format", fmt])
    print(f"check 10,000 tools ({size/1e6:.1f} MB), --format {fmt}, 1 core: median {med*1000:.0f} ms, "
          f"best {best*1000:.0f} ms = {size/1e6/med:.0f} MB/s (budget: >= 50 MB/s)")
med, best = bench(os.path.join(work, "one.json"), [])
print(f"check one-tool file end to end: median {med*1000:.1f} ms, best {best*1000:.1f} ms (budget: < 20 ms)")
PY
state=$(mktemp -d)
for rate in 5 10; do
  start=$(date +%s.%N)
  MCPPROBE_STATE_DIR=$state "$bin" demo --format json --rate "$rate" > "$work/demo.json" 2>/dev/null || true
  end=$(date +%s.%N)
  python3 - "$work/demo.json" "$start" "$end" "$rate" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); wall = float(sys.argv[3]) - float(sys.argv[2]); rate = int(sys.argv[4])
n = r["requests_sent"]; budget = 1.3 * n / rate
print(f"demo scan at --rate {rate}: {n} requests (budget <= 40), wall {wall:.2f} s "
      f"(budget 1.3 x {n} / {rate} = {budget:.2f} s) {'ok' if wall <= budget and n <= 40 else 'OVER'}")
PY
done
rm -rf "$state"

# 5. Detection on published attacks, per source and per family.
if [ -d ../shared/corpus/wild-dev ]; then
  scripts/corpus.sh | sed -n '/^corpus wild-dev:/,/^total:/p'
else
  echo "corpus: ../shared/corpus/wild-dev not found (detection figures not measured)"
fi
