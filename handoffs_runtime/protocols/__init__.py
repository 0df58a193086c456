"""Other vendors' protocols: tools from MCP servers (:mod:`.mcp`).

Each protocol is a package of its own, imported only where used: its SDK is an optional extra.
"""
