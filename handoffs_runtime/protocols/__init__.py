"""Other vendors' protocols: tools from MCP servers (``mcp/``).

Each protocol is a package of its own, imported only where used: its SDK is an optional extra.
"""
