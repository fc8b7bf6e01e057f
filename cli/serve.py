"""`rooflens serve`: the MCP server over stdio (default) or streamable HTTP (`--http`).

HTTP rules live in `http_app` (Host/Origin, exposure, CORS) and `http_auth` (the token); this
module turns their refusals into a one-line message and exit code 2 before anything is bound.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from rooflens.server.settings import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_PORT,
    LOCALHOST,
    MCP_PATH,
    TOKEN_ENV,
    WORKSPACE_NAME,
)

EXIT_BAD_INPUT = 2
_HTTP_ONLY = ("allowed_host", "allowed_origin", "cors_origin", "shared_workspace")


def add_serve_parser(commands: argparse._SubParsersAction) -> None:
    """The `serve` sub-command and its options."""
    serve = commands.add_parser(
        "serve",
        help="run the MCP server (stdio by default)",
        description="Serve rooflens's tools to an MCP client. Files are read and written only "
        "inside the allowed directories (--allow-dir, repeatable, and ROOFLENS_ALLOWED_DIRS; "
        "the current folder when none is given).",
    )
    _file_arguments(serve)
    _http_arguments(serve)
    serve.epilog = (
        f"With --http, set {TOKEN_ENV} to require 'Authorization: Bearer <token>'; it is "
        "required when anything but this machine is admitted (a non-loopback --host, "
        "--allowed-host, --allowed-origin or --cors-origin)."
    )


def _file_arguments(parser: argparse.ArgumentParser) -> None:
    """What the server may read and write: allowed folders, workspace, result size."""
    parser.add_argument("--allow-dir", action="append", default=[], help="an allowed directory")
    parser.add_argument(
        "--allow-broad",
        action="store_true",
        help="allow the current folder even when it is / or your home folder",
    )
    parser.add_argument(
        "--workspace",
        help="folder for run folders and the run index, inside an allowed directory "
        f"(default: {WORKSPACE_NAME}/ in the first allowed directory)",
    )
    parser.add_argument(
        "--shared-workspace",
        action="store_true",
        help="with --http, every session sees every run (default: only its own)",
    )
    parser.add_argument(
        "--max-result-kb",
        type=int,
        default=DEFAULT_MAX_RESULT_BYTES // 1024,
        help="size limit of one tool result in KiB (default 16)",
    )


def _http_arguments(parser: argparse.ArgumentParser) -> None:
    """The HTTP transport: bind address and the extra Host, Origin and CORS it admits."""
    parser.add_argument(
        "--http", action="store_true", help=f"streamable HTTP at {MCP_PATH} instead of stdio"
    )
    parser.add_argument("--host", default=LOCALHOST, help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"HTTP port (default {DEFAULT_PORT})"
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="also accept this Host header (a DNS name, a reverse proxy); repeatable",
    )
    parser.add_argument(
        "--allowed-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="also accept this Origin header, e.g. https://proxy.example; repeatable",
    )
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let browser pages from this origin call the server (CORS); repeatable",
    )


def _fail(message: str) -> int:
    print(f"rooflens: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def run_serve(args: argparse.Namespace) -> int:
    # the server stack loads only when it runs: `rooflens serve --help` stays light
    from rooflens.server.app import ServerConfig, build_server
    from rooflens.server.paths import BroadRoot, PathPolicy, PathRefused

    if not args.http:
        given = [f"--{name.replace('_', '-')}" for name in _HTTP_ONLY if getattr(args, name)]
        if given:
            return _fail(f"{given[0]} applies to HTTP only: add --http")
    try:
        policy = PathPolicy.from_env_and_args(args.allow_dir, broad=args.allow_broad)
        config = ServerConfig(
            allowed_dirs=list(policy.allowed),
            workspace=Path(args.workspace).expanduser() if args.workspace else None,
            shared_workspace=args.shared_workspace,
            http=args.http,
            max_result_bytes=args.max_result_kb * 1024,
        )
        if config.workspace is not None:
            policy.resolve(config.workspace, must_exist=False, for_write=True)
        server = build_server(config)
    except (BroadRoot, PathRefused, ValueError) as exc:
        return _fail(str(exc))
    if not args.http:
        server.run()
        return 0
    return _serve_http(args, server)


def _serve_http(args: argparse.Namespace, server) -> int:
    import uvicorn

    from rooflens.server.http_app import WILDCARDS, HttpConfigError, HttpOptions, build_http_app
    from rooflens.server.http_auth import TokenConfigError, read_token

    try:
        options = HttpOptions(
            host=args.host,
            port=args.port,
            token=read_token(os.environ),
            allowed_hosts=args.allowed_host,
            allowed_origins=args.allowed_origin,
            cors_origins=args.cors_origin,
        )
        http = build_http_app(server, options)
    except (HttpConfigError, TokenConfigError) as exc:
        return _fail(str(exc))
    auth = "bearer token required" if options.token else "no token: this machine only"
    print(f"rooflens: serving MCP over streamable HTTP at {http.url} ({auth})", file=sys.stderr)
    if args.host in WILDCARDS:
        print(
            f"rooflens: listening on every interface; Host accepted: {', '.join(http.hosts)} "
            "(add others with --allowed-host)",
            file=sys.stderr,
        )
    # the SDK's per-session lines and uvicorn's access lines go through the CLI's one handler
    # (logging_setup.py) on stderr: shown only with -v / --log-level INFO
    level = logging.getLevelName(logging.getLogger().getEffectiveLevel()).lower()
    uvicorn.run(http.app, host=args.host, port=args.port, log_level=level, log_config=None)
    return 0
