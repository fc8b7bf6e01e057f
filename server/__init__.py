"""The MCP face of rooflens and its command line."""
