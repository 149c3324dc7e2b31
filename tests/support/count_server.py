#!/usr/bin/env python3
"""A tiny HTTP server for tests that must run on a non-loopback address (inside a network
namespace). It answers from a route table and prints one JSON line per request on stdout, so
the test can count exactly what reached the server.

    count_server.py HOST PORT ROUTES_JSON

ROUTES_JSON maps "METHOD PATH" (or "* PATH") to {"status": N, "body": "...", "headers": {...}};
anything else answers 404. The first line printed is "READY".
"""
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

host, port, routes = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])

class Handler(BaseHTTPRequestHandler):
    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        print(json.dumps({"method": self.command, "path": self.path,
                          "headers": dict(self.headers.items()), "body": body}), flush=True)
        route = routes.get(f"{self.command} {self.path.split('?')[0]}") or routes.get(f"* {self.path.split('?')[0]}")
        status = route["status"] if route else 404
        payload = (route.get("body", "") if route else "not found").encode()
        self.send_response(status)
        for k, v in (route.get("headers", {}) if route else {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_DELETE = do_OPTIONS = do_PUT = handle_any

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer((host, port), Handler)
print("READY", flush=True)
server.serve_forever()
