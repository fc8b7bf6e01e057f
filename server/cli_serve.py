"""`rooflens serve`: the MCP server over stdio (default) or streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import argparse

from rooflens.server.app import ServerConfig, build_server
from rooflens.server.paths import PathPolicy

LOCALHOST = "127.0.0.1"


def add_serve_parser(commands: argparse._SubParsersAction) -> None:
    serve = commands.add_parser(
        "serve",
        help="run the MCP server (stdio by default)",
        description="Serve rooflens's tools to an MCP client. Files are read and written only "
        "inside the allowed directories (--allow-dir, repeatable, and ROOFLENS_ALLOWED_DIRS; "
        "the current folder when none is given).",
    )
    serve.add_argument("--allow-dir", action="append", default=[], help="an allowed directory")
    serve.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    serve.add_argument("--host", default=LOCALHOST, help="HTTP bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")


def run_serve(args: argparse.Namespace) -> int:
    policy = PathPolicy.from_env_and_args(args.allow_dir)
    server = build_server(ServerConfig(allowed_dirs=list(policy.allowed)))
    if args.http:
        server.run("streamable-http", host=args.host, port=args.port)
    else:
        server.run()
    return 0
