# A server on the Python SDK `mcp` 1.x (FastMCP): 2025 eras only. PORT from the environment.
import os
from mcp.server.fastmcp import FastMCP

mcp = FastMCP("py1-probe", host="127.0.0.1", port=int(os.environ["PORT"]))

@mcp.tool()
def echo(text: str) -> str:
    """Echo text back"""
    return text

print("READY", flush=True)
mcp.run(transport="streamable-http")
