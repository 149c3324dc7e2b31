# A stdio server on the Python SDK `mcp` 1.x (FastMCP), started by a client configuration in
# the discovery tests (issue 26).
from mcp.server.fastmcp import FastMCP

mcp = FastMCP("py1-stdio-probe")

@mcp.tool()
def echo(text: str) -> str:
    """Echo text back"""
    return text

mcp.run(transport="stdio")
