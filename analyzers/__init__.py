"""The rooflens engine: trace -> perf report -> category analyses -> findings. No MCP here."""
