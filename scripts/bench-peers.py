#!/usr/bin/env python3
"""Benchmarks beside the peers (SPEC §10, issue 11), printed as one table with ratios:

  1. offline, the same generated tool list for every tool: `mcpprobe check`, Cisco's
     `cisco-ai-mcp-scanner` (YARA only, offline `static`), `tool-scan` (one file per tool, as it
     reads them);
  2. live: a full passive `mcpprobe scan` at --rate 10 of every real SDK server the peer tests use
     (requests, wall, ratio to the floor requests / rate), and `mcpmap` against the TypeScript SDK
     v1 server beside mcpprobe, requests counted at the server.

    scripts/bench-peers.py BIN WORKDIR

Peers come from `scripts/setup-bench-peers.sh` (.peers/bench, .peers/cargo); a peer that is not
installed is reported as such, never guessed. Everything runs on 127.0.0.1.
"""
import json, os, shutil, socket, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = os.path.join(ROOT, ".peers")
BIN, WORK = sys.argv[1], sys.argv[2]
PIN = ["taskset", "-c", "0"] if shutil.which("taskset") else []
ENV = dict(os.environ, HOME=WORK, LITELLM_LOCAL_MODEL_COST_MAP="True", NO_COLOR="1")
rows = []


def timed(cmd, runs=1, ok=(0, 1), **kw):
    walls = []
    for _ in range(runs):
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, env=ENV, timeout=900, **kw)
        walls.append(time.perf_counter() - t)
        if p.returncode not in ok:
            raise RuntimeError(f"{cmd[0]} exited {p.returncode}: {p.stderr.decode(errors='replace')[-300:]}")
    return statistics.median(walls), p


# 1. Offline.
tools_path = os.path.join(WORK, "peers-1000.json")
subprocess.run([sys.executable, os.path.join(ROOT, "scripts/gen-bench-tools.py"), tools_path, "1000"], check=True)
size = os.path.getsize(tools_path)
ours, _ = timed(PIN + [BIN, "check", tools_path, "--format", "json"], runs=5)
rows.append(("check 1,000 tools (%.1f MB)" % (size / 1e6), "mcpprobe check", f"{ours:.3f} s", "1.0"))
cisco = os.path.join(PEERS, "bench/bin/mcp-scanner")
if os.path.exists(cisco):
    with open(tools_path) as f:
        doc = json.load(f)
    plain = os.path.join(WORK, "peers-1000-tools.json")
    with open(plain, "w") as f:
        json.dump({"tools": doc["result"]["tools"]}, f)
    try:
        wall, _ = timed(PIN + [cisco, "--analyzers", "yara", "static", "--tools", plain])
        rows.append(("", "cisco-ai-mcp-scanner 4.8.7 (YARA)", f"{wall:.3f} s", f"{wall / ours:.0f}"))
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        rows.append(("", "cisco-ai-mcp-scanner 4.8.7 (YARA)", f"failed: {e}", "-"))
    toolscan = os.path.join(PEERS, "bench/bin/tool-scan")
    per = os.path.join(WORK, "per-tool")
    os.makedirs(per, exist_ok=True)
    files = []
    for i, t in enumerate(doc["result"]["tools"]):
        p = os.path.join(per, f"{i:05}.json")
        with open(p, "w") as f:
            json.dump(t, f)
        files.append(p)
    try:
        wall, _ = timed(PIN + [toolscan, "--format", "json", "--compact-json", *files], ok=(0, 1, 2))
        rows.append(("", "tool-scan 1.1.0", f"{wall:.3f} s", f"{wall / ours:.0f}"))
    except Exception as e:  # noqa: BLE001
        rows.append(("", "tool-scan 1.1.0", f"failed: {e}", "-"))
else:
    rows.append(("", "cisco-ai-mcp-scanner, tool-scan", "not installed (scripts/setup-bench-peers.sh)", "-"))


# 2. Live scans of the real SDK servers.
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(kind, log=False):
    port = free_port()
    everything = os.path.join(PEERS, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
    loopback = os.path.join(ROOT, "tests/peers/force-loopback.cjs")
    env = dict(os.environ, PORT=str(port))
    path = "/mcp"
    if kind in ("everything-http", "everything-sse"):
        cmd = ["node", "--require", loopback, everything, "sse" if kind == "everything-sse" else "streamableHttp"]
        path = "/sse" if kind == "everything-sse" else "/mcp"
    elif kind == "ts-v1":
        cmd = ["node", os.path.join(PEERS, "ts-v1-server.mjs")]
        if log:
            env["LOG_REQUESTS"] = "1"
    elif kind.startswith("ts-v2"):
        cmd = ["node", os.path.join(PEERS, "ts-v2-server.mjs")]
        if kind == "ts-v2-reject":
            env["LEGACY"] = "reject"
    elif kind.startswith("py2"):
        cmd = [os.path.join(PEERS, "py2/bin/python"), os.path.join(ROOT, "tests/peers/py2_server.py")]
        if kind == "py2-stateless":
            env.update(STATELESS="1", JSON="1")
    else:
        cmd = [os.path.join(PEERS, "py1/bin/python"), os.path.join(ROOT, "tests/peers/py1_server.py")]
    out = open(os.path.join(WORK, f"{kind}.log"), "w")
    proc = subprocess.Popen(cmd, env=env, cwd=PEERS, stdout=out, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port}{path}", out.name


if not os.path.exists(os.path.join(PEERS, "node_modules")):
    rows.append(("real SDK scans", "-", "not installed (scripts/setup-peers.sh)", "-"))
else:
    state = os.path.join(WORK, "state")
    for kind in ["everything-http", "everything-sse", "ts-v1", "ts-v2", "ts-v2-reject", "py2", "py2-stateless", "py1"]:
        proc, url, _ = start(kind)
        try:
            t = time.perf_counter()
            p = subprocess.run([BIN, "scan", url, "--rate", "10", "--format", "json"], capture_output=True,
                               env=dict(ENV, MCPPROBE_STATE_DIR=state), timeout=300)
            wall = time.perf_counter() - t
            try:
                n = json.loads(p.stdout)["requests_sent"]
                floor = n / 10
                rows.append((f"scan {kind} --rate 10", f"mcpprobe ({n} requests, exit {p.returncode})",
                             f"{wall:.2f} s (floor {floor:.1f} s)", f"{wall / floor:.2f} x floor"))
            except (ValueError, KeyError, ZeroDivisionError):
                rows.append((f"scan {kind} --rate 10", "mcpprobe", f"no report (exit {p.returncode})", "-"))
        finally:
            proc.kill()
            proc.wait()
    mcpmap = os.path.join(PEERS, "cargo/bin/mcpmap")
    for name, cmd in [("mcpprobe", lambda u: [BIN, "scan", u, "--rate", "10", "--format", "json"]),
                      ("mcpmap 0.1.1 --enumerate", lambda u: [mcpmap, "127.0.0.1", "-p", u.split(":")[2].split("/")[0],
                                                              "--scheme", "http", "--enumerate", "--json"])]:
        if name.startswith("mcpmap") and not os.path.exists(mcpmap):
            rows.append(("ts-v1 requests at the server", name, "not installed", "-"))
            continue
        proc, url, log = start("ts-v1", log=True)
        try:
            t = time.perf_counter()
            p = subprocess.run(cmd(url), capture_output=True, env=dict(ENV, MCPPROBE_STATE_DIR=os.path.join(WORK, "state")),
                               timeout=300)
            wall = time.perf_counter() - t
        finally:
            proc.kill()
            proc.wait()
        with open(log) as f:
            n = sum(1 for line in f if line.startswith("REQ "))
        rows.append(("ts-v1 requests at the server", f"{name} (exit {p.returncode})", f"{n} requests, {wall:.2f} s", "-"))

w = [max(len(r[i]) for r in rows) for i in range(4)]
print("beside the peers (one run, this machine):")
for r in rows:
    print("  " + "  ".join(c.ljust(w[i]) for i, c in enumerate(r)))
