"""Other vendors' protocols: a team served over A2A, and remote A2A agents as members of a team.

Tools from MCP servers are tools like any other: they live in ``tools/mcp/``.
"""
