"""The MCP server: the vault as tools and resources for agents."""
