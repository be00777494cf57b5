"""The MCP transport: claiming stdio, the first handshake, raw JSON-RPC lines, and
starting and stopping ``vaultsearch mcp``."""
