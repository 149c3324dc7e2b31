#!/usr/bin/env python3
"""An MCP server that echoes every secret it is handed back, for the redaction tests (SPEC §7,
"Secrets never leave"). Nothing it sends may reach a report, a trace or a log.

    echo_secrets.py http     serves MCP over HTTP on 127.0.0.1 (a free port, printed first on
                             stdout as `PORT <n>`), until stdin closes
    echo_secrets.py stdio    speaks MCP over stdio

What it heard: over HTTP every request header and the request's path and query (raw and
decoded, every value alone); over stdio every environment value but PATH, HOME and LANG. Each
is echoed as is, percent-encoded, JSON-escaped (inside the JSON bodies), as the bare words of
each value, and as base64 of `user:pass` words, in the server's name, its instructions, every
tool's description, an error message, response headers, stderr and every other answer.
"""
import base64, json, os, sys, threading, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

IGNORED = {"PATH", "HOME", "LANG"}


def echoes(values):
    """Every form of every value: whole, words, percent-encoded, upper case."""
    out = []
    for v in values:
        if not v:
            continue
        out.append(v)
        out.append(urllib.parse.quote(v, safe=""))
        out.append(urllib.parse.quote_plus(v))
        for sep in [";", ",", "="]:
            v = v.replace(sep, " ")
        for w in v.split():
            out.append(w)
            out.append(urllib.parse.quote(w, safe=""))
            if ":" in w:
                out.append(base64.b64encode(w.encode()).decode())
            try:
                out.append(base64.b64decode(w + "==", validate=True).decode())
            except Exception:
                pass
    return " | ".join(out)


def tools(heard):
    return [
        {
            "name": "get_echo",
            "description": "Echoes what it heard: " + heard,
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string", "description": heard}}},
            "annotations": {"readOnlyHint": True},
        },
        {
            "name": "get_" + "".join(c for c in heard if c.isalnum())[:40].lower(),
            "description": "A tool named after a secret.",
            "inputSchema": {"type": "object", "properties": {}},
            "annotations": {"readOnlyHint": True},
        },
    ]


def answer(msg, heard):
    """The JSON-RPC answer to `msg` (None for a notification)."""
    method, rid = msg.get("method"), msg.get("id")
    if rid is None:
        return None
    if method == "initialize":
        result = {
            "protocolVersion": msg.get("params", {}).get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
            "serverInfo": {"name": "echo " + heard[:200], "version": "1.0 " + heard[:100]},
            "instructions": "Heard: " + heard,
        }
    elif method == "tools/list":
        result = {"tools": tools(heard)}
    elif method == "prompts/list":
        result = {"prompts": [{"name": "echo", "description": heard}]}
    elif method == "resources/list":
        result = {"resources": [{"uri": "echo://x", "name": "echo", "description": heard}]}
    elif method == "resources/templates/list":
        result = {"resourceTemplates": []}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": heard}], "isError": False}
    else:
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "unknown method; heard " + heard}}
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def stdio():
    heard = echoes([v for k, v in sorted(os.environ.items()) if k not in IGNORED])
    sys.stderr.write("starting with " + heard + "\n")
    sys.stderr.flush()
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        sys.stderr.write("got " + line.strip() + " while holding " + heard + "\n")
        sys.stderr.flush()
        out = answer(msg, heard)
        if out is not None:
            sys.stdout.write(json.dumps(out) + "\n")
            sys.stdout.flush()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def heard(self):
        parsed = urllib.parse.urlsplit(self.path)
        values = [v for _, v in self.headers.items()]
        values.append(self.path)
        values.append(parsed.query)
        values += [v for _, v in urllib.parse.parse_qsl(parsed.query)]
        return echoes(values)

    def send(self, status, body, heard):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Echo", heard[:2000].encode("latin-1", "replace").decode("latin-1"))
        self.send_header("WWW-Authenticate", 'Bearer realm="' + heard[:500].replace('"', "'") + '"')
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        heard = self.heard()
        self.send(404, json.dumps({"error": "not here", "heard": heard}), heard)

    def do_DELETE(self):
        self.send(200, "{}", self.heard())

    def do_POST(self):
        heard = self.heard()
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        try:
            msg = json.loads(body)
        except ValueError:
            self.send(400, json.dumps({"error": "bad json; heard " + heard}), heard)
            return
        if not self.headers.get("Authorization") and not self.headers.get("Cookie"):
            # The anonymous view: a 401 that still echoes what it heard.
            self.send(401, json.dumps({"error": "who are you? heard " + heard}), heard)
            return
        out = answer(msg, heard)
        if out is None:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send(200, json.dumps(out), heard)


def http():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("PORT", server.server_address[1], flush=True)
    # Serve until the test closes stdin (or dies).
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    {"http": http, "stdio": stdio}[sys.argv[1] if len(sys.argv) > 1 else "stdio"]()
