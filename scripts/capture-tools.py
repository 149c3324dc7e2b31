#!/usr/bin/env python3
"""Capture the tools/list of a real stdio MCP server into a fixture.

    scripts/capture-tools.py OUT.json -- COMMAND [ARGS...]

Speaks newline-delimited JSON-RPC: initialize (2025-06-18), notifications/initialized, then
tools/list over every page (at most 20). Writes {"jsonrpc","id","result":{"tools":[...]}}.
Used to refresh fixtures/real/*.json; the tests only read the captured files.
"""
import json, subprocess, sys, threading, queue

def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    out, cmd = sys.argv[1], sys.argv[3:]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(l) for l in p.stdout], daemon=True).start()

    def call(msg_id, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if msg_id is not None:
            msg["id"] = msg_id
        if params is not None:
            msg["params"] = params
        p.stdin.write(json.dumps(msg) + "\n"); p.stdin.flush()
        if msg_id is None:
            return None
        while True:
            reply = json.loads(lines.get(timeout=30))
            if reply.get("id") == msg_id:
                return reply

    try:
        init = call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "mcpprobe-capture", "version": "0"}})
        call(None, "notifications/initialized")
        tools, cursor, n = [], None, 2
        for _ in range(20):
            reply = call(n, "tools/list", {"cursor": cursor} if cursor else {})
            result = reply["result"]
            tools += result.get("tools", [])
            cursor = result.get("nextCursor")
            n += 1
            if not cursor:
                break
        server = init["result"].get("serverInfo", {})
        doc = {"jsonrpc": "2.0", "id": 2, "result": {"tools": tools}}
        with open(out, "w") as f:
            json.dump(doc, f, indent=2, ensure_ascii=False)
            f.write("\n")
        print(f"{out}: {len(tools)} tools from {server.get('name')} {server.get('version')}")
    finally:
        p.kill()

if __name__ == "__main__":
    main()
