"""The MCP tools, one module per group, and the one registry that lists them."""
