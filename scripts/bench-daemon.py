#!/usr/bin/env python3
"""The daemon at 10,000 targets (SPEC §10, issue 13): peak memory, and /targets latency while
scans run. Most targets are not due: their current slot already has a complete run in the
state database (seeded here with the daemon's own migration and slot formula); 10 are due and
are scanned against the bundled reference server on loopback while /targets is timed.

Usage: scripts/bench-daemon.py BINARY [TARGETS=10000] [DUE=10]
"""
import glob
import hashlib
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

binary = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
due = int(sys.argv[3]) if len(sys.argv) > 3 else 10
every_ms = 86_400_000
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def offset(name):
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") % every_ms


def slot(now_ms, name):
    off = offset(name)
    return (now_ms - off) // every_ms * every_ms + off


work = tempfile.mkdtemp()
server = subprocess.Popen([binary, "demo", "--serve"], stdout=subprocess.PIPE, text=True)
url = server.stdout.readline().strip()
port = free_port()
names = [f"target-{i:05d}" for i in range(n)]
with open(os.path.join(work, "mcpprobe.toml"), "w") as f:
    f.write(f'listen = "127.0.0.1:{port}"\nrate = 10\nmax_concurrent_scans = 8\n')
    for name in names:
        f.write(f'[[targets]]\nname = "{name}"\nurl = "{url}"\nevery = "24h"\n')

db = sqlite3.connect(os.path.join(work, "daemon.sqlite3"))
migrations = sorted(glob.glob(os.path.join(root, "src/daemon/migrations/[0-9]*.sql")))
for m in migrations:
    db.executescript(open(m).read())
db.execute(f"PRAGMA user_version = {len(migrations)}")
now = int(time.time() * 1000)
db.executemany(
    "INSERT INTO targets (name, url, every_ms, active, added_ms) VALUES (?, ?, ?, 1, ?)",
    [(name, url, every_ms, now) for name in names],
)
db.executemany(
    "INSERT INTO runs (target, slot, status, started_ms, finished_ms, exit_code, report_json) "
    "VALUES (?, ?, 'complete', ?, ?, 0, '{}')",
    [(name, slot(now, name), now - 1000, now - 500) for name in names[due:]],
)
db.execute("UPDATE targets SET latest_run = (SELECT max(id) FROM runs WHERE runs.target = targets.name)")
db.commit()
db.close()

env = dict(os.environ, MCPPROBE_STATE_DIR=work)
daemon = subprocess.Popen(
    [binary, "daemon", "--config", os.path.join(work, "mcpprobe.toml")],
    env=env, stderr=subprocess.PIPE, text=True,
)


def get(path):
    t = time.perf_counter()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as r:
        body = r.read()
    return time.perf_counter() - t, body


deadline = time.time() + 60
while True:
    try:
        get("/healthz")
        break
    except OSError:
        if time.time() > deadline:
            sys.exit("the daemon did not start")
        time.sleep(0.1)

times = []
finished = 0
deadline = time.time() + 120
while time.time() < deadline:
    dt, body = get("/targets")
    times.append(dt)
    targets = json.loads(body)["targets"]
    assert len(targets) == n, len(targets)
    running = sum(1 for t in targets if t["latest"] and t["latest"]["outcome"] == "running")
    finished = sum(
        1 for t in targets[:due] if t["latest"] and t["latest"]["outcome"] not in ("running",)
    )
    if finished == due and running == 0:
        break
    time.sleep(0.2)

peak_kb = 0
with open(f"/proc/{daemon.pid}/status") as f:
    for line in f:
        if line.startswith("VmHWM:"):
            peak_kb = int(line.split()[1])
daemon.terminate()
daemon.wait(timeout=30)
server.terminate()
server.wait(timeout=30)
med, worst = statistics.median(times), max(times)
print(
    f"daemon with {n} targets ({due} due, scanned on loopback): peak RSS {peak_kb / 1024:.1f} MB "
    f"(budget 200 MB); GET /targets ({n} targets) while scans ran: median {med * 1000:.1f} ms, "
    f"worst {worst * 1000:.1f} ms over {len(times)} requests (budget 50 ms); {finished}/{due} due runs finished"
)
