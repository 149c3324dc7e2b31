#!/usr/bin/env bash
# Benchmarks of SPEC §10 (measured here, never asserted in tests):
#   1. `mcpprobe check` throughput on a generated 10,000-tool tools/list (~20 MB), on one core,
#      with peak memory against 3 × the input;
#   2. `mcpprobe check` end to end on a one-tool file, and on the adversarial P4 description;
#   3. a full passive `mcpprobe demo` scan of the bundled reference server on loopback: requests
#      sent, and wall time against 1.1 × requests ÷ rate;
#   4. `mcpprobe diff` of a 10,000-tool list against the same list with every tool renamed
#      (10,000 renames found through the content-hash map of src/fingerprint.rs);
#   5. detection on published attacks (../shared/corpus/wild-dev/, scripts/corpus.sh): per source
#      and per family, poisoned files detected and benign tools flagged;
#   6. the hostile-server scenarios (scripts/hostile.sh): wall time and peak memory of each;
#   8. the daemon with 10,000 configured targets (scripts/bench-daemon.py): peak memory against
#      200 MB and GET /targets latency against 50 ms while scans run;
#   7. beside the peers (scripts/bench-peers.py): Cisco's mcp-scanner (YARA) and tool-scan on the
#      same tool list, mcpmap against the same local server (requests counted at the server), and
#      every real SDK server scanned at --rate 10 against its floor.
# Usage: scripts/bench.sh [RUNS=5] [all|diff]   (`diff` runs only benchmark 4)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
only=${2:-all}
cargo build --release --quiet --bin mcpprobe --example rules_throughput
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
# The adversarial P4 description (issue 11): "Never. " + "send_email " x 700,000 on a server
# with two tools, about 7.7 MB.
python3 - "$work/adversarial.json" <<'PY'
import json, sys
text = "Never. " + "send_email " * 700000
json.dump({"tools": [
    {"name": "send_email", "description": "Sends an email.", "inputSchema": {"type": "object"}},
    {"name": "helper", "description": text, "inputSchema": {"type": "object"}}]}, open(sys.argv[1], "w"))
PY
python3 - "$work" "$runs" "$bin" "${pin[@]}" <<'PY'
import os, resource, statistics, subprocess, sys, time
work, runs, binary, pin = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
def bench(path, args, n=runs):
    times, peaks = [], []
    for _ in range(n + 1):
        t = time.perf_counter()
        # GNU time reports the child's peak resident set (KB) on stderr's last line.
        p = subprocess.run(["/usr/bin/time", "-f", "%M"] + pin + [binary, "check", path, *args],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - t)
        if p.returncode not in (0, 1):
            sys.exit(f"check failed ({p.returncode}): {p.stderr.decode()}")
        peaks.append(int(p.stderr.decode().strip().splitlines()[-1]) * 1024)
    return statistics.median(times[1:]), min(times[1:]), max(peaks)
big = os.path.join(work, "big.json")
size = os.path.getsize(big)
for fmt in ("json", "terminal"):
    med, best, peak = bench(big, ["--format", fmt])
    rate = size / 1e6 / med
    print(f"check 10,000 tools ({size/1e6:.1f} MB), --format {fmt}, 1 core: median {med*1000:.0f} ms, "
          f"best {best*1000:.0f} ms = {rate:.0f} MB/s (budget >= 150: {'ok' if rate >= 150 else 'MISSED'}); "
          f"peak memory {peak/1e6:.0f} MB = {peak/size:.1f} x input (budget < 3: {'ok' if peak < 3*size else 'MISSED'})")
# The rules alone (no reading, parsing, fingerprint or report), over the same list.
rules = subprocess.run(pin + [os.path.join(os.path.dirname(binary), "examples", "rules_throughput"), big, str(runs)],
                       capture_output=True, text=True)
print(rules.stdout.strip() or f"rules_throughput failed: {rules.stderr.strip()}")
med, best, _ = bench(os.path.join(work, "one.json"), [])
print(f"check one-tool file end to end: median {med*1000:.1f} ms, best {best*1000:.1f} ms "
      f"(budget < 20 ms: {'ok' if med < 0.02 else 'MISSED'})")
adv = os.path.join(work, "adversarial.json")
med, best, peak = bench(adv, ["--format", "json"], n=3)
print(f"check the adversarial P4 description ({os.path.getsize(adv)/1e6:.1f} MB): median {med*1000:.0f} ms, "
      f"peak {peak/1e6:.0f} MB (budget < 1 s: {'ok' if med < 1 else 'MISSED'})")
PY
state=$(mktemp -d)
for rate in 5 10; do
  start=$(date +%s.%N)
  MCPPROBE_STATE_DIR=$state "$bin" demo --format json --rate "$rate" > "$work/demo.json" 2>/dev/null || true
  end=$(date +%s.%N)
  python3 - "$work/demo.json" "$start" "$end" "$rate" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); wall = float(sys.argv[3]) - float(sys.argv[2]); rate = int(sys.argv[4])
n = r["requests_sent"]; budget = 1.1 * n / rate
print(f"demo scan at --rate {rate} (server start included): {n} requests (budget <= 40), wall {wall:.2f} s "
      f"(budget 1.1 x {n} / {rate} = {budget:.2f} s) {'ok' if wall <= budget and n <= 40 else 'OVER'}")
PY
done
rm -rf "$state"

# 5. Detection on published attacks, per source and per family.
if [ -d ../shared/corpus/wild-dev ]; then
  scripts/corpus.sh | sed -n '/^corpus wild-dev:/,/^total:/p'
else
  echo "corpus: ../shared/corpus/wild-dev not found (detection figures not measured)"
fi

# 6. Hostile servers: every scenario's wall time and peak memory (scripts/hostile.sh).
if [ -x scripts/hostile.sh ]; then
  scripts/hostile.sh "$bin"
fi

# 8. The daemon at 10,000 targets (10 due): peak memory and /targets latency while scans run.
python3 scripts/bench-daemon.py "$bin" 10000 10

# 7. Beside the peers: the same inputs through Cisco's mcp-scanner (YARA), tool-scan and mcpmap,
#    and every real SDK server scanned at --rate 10 against its floor.
scripts/setup-peers.sh >/dev/null
if scripts/setup-bench-peers.sh >/dev/null 2>&1; then :; else echo "peers: setup-bench-peers.sh failed; peers not measured"; fi
python3 scripts/bench-peers.py "$bin" "$work"
