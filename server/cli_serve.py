"""`rooflens serve`: the MCP server over stdio (default) or streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import argparse
import os

import uvicorn

from rooflens.server.app import ServerConfig, build_server
from rooflens.server.http_auth import TOKEN_ENV, BearerAuth
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
    serve.epilog = f"With --http, set {TOKEN_ENV} to require `Authorization: Bearer <token>`."


def run_serve(args: argparse.Namespace) -> int:
    policy = PathPolicy.from_env_and_args(args.allow_dir)
    server = build_server(ServerConfig(allowed_dirs=list(policy.allowed)))
    if not args.http:
        server.run()
        return 0
    app = server.streamable_http_app()
    token = os.environ.get(TOKEN_ENV)
    if token:
        app = BearerAuth(app, token)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
