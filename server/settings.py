"""Names and defaults that the command line shows before anything heavy is imported, and
the package's version. Light on purpose: `rooflens --help` imports this and argparse only."""

from __future__ import annotations

MCP_PATH = "/mcp"
TOKEN_ENV = "ROOFLENS_TOKEN"
LOCALHOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_MAX_RESULT_BYTES = 16_384
WORKSPACE_NAME = "rooflens_runs"
