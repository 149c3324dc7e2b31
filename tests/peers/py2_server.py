# A server on the Python SDK `mcp` 2.x (MCPServer): both eras on one endpoint.
# PORT from the environment; STATELESS=1 and JSON=1 select those modes. Binds 127.0.0.1.
import os
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("py2-probe")

@mcp.tool()
def echo(text: str) -> str:
    """Echo text back"""
    return text

print("READY", flush=True)
mcp.run(transport="streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]),
        stateless_http=os.environ.get("STATELESS") == "1", json_response=os.environ.get("JSON") == "1")
