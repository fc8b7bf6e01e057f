"""Static bearer-token auth for `rooflens serve --http`, built from the MCP SDK's auth pieces.

Why this shape (read against SDK 2.3):

* The SDK's route-level auth (`MCPServer(token_verifier=..., auth=AuthSettings(...))`) wants an
  OAuth `issuer_url`, and with `resource_server_url` it publishes RFC 9728 metadata and puts
  `resource_metadata=` in every 401. Both tell a client "go and do OAuth". rooflens has no
  authorization server, only a shared secret, so advertising one only sends OAuth-capable
  clients into discovery and dynamic registration that cannot succeed.
* So auth is applied on the ASGI side around `MCPServer.streamable_http_app()`, with the SDK's
  own classes: Starlette's `AuthenticationMiddleware` with the SDK's `BearerAuthBackend` (header
  parsing, expiry) over our `TokenVerifier` (constant-time comparison), then the SDK's
  `AuthContextMiddleware` (so `get_access_token()` and the transport's per-session principal
  binding work as with SDK auth). `server/app.py` needs no change.
* Only the gate is ours, because the SDK's `RequireAuthMiddleware` answers with an OAuth-style
  body `{"error": "invalid_token", ...}` that the SDK client cannot show: its streamable-HTTP
  transport surfaces a non-2xx body only when it is a JSON-RPC error, otherwise it reports
  "Server returned an error response". Our 401 therefore carries a JSON-RPC error whose message
  says to set the Authorization header; `mcp.Client(url)` raises `MCPError` with that text.
  Headers follow RFC 6750: `WWW-Authenticate: Bearer realm="rooflens"` when no credentials came
  (no error code, per its section 3.1), plus `error="invalid_token"` when a wrong one did. No
  `resource_metadata` and no `scope`: nothing invites OAuth.
* A client configured for OAuth (the SDK's `OAuthClientProvider`, and most desktop clients)
  still probes `/.well-known/oauth-protected-resource[/mcp]`, then
  `/.well-known/oauth-authorization-server`, then POSTs `/register` on any 401. We answer those
  paths with 404 and a JSON body naming the fix; the SDK's OAuth client ends with
  "Registration failed: 404 {... set the Authorization header ...}" instead of a bare 404.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend
from mcp.server.auth.provider import AccessToken
from starlette.datastructures import Headers
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from .settings import TOKEN_ENV

TOKEN_CLIENT_ID = "rooflens-token"
"""The principal every holder of the shared token is (`AccessToken.client_id`)."""

UNAUTHORIZED_CODE = -32010
"""JSON-RPC code of the 401 body: implementation-defined band (-32000..-32019), clear of the
SDK's own -32000/-32001."""

FIX = f"set the Authorization header to 'Bearer <token>' with the token in {TOKEN_ENV}"
NO_OAUTH = "rooflens does not use OAuth"

OAUTH_PATHS = (
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-authorization-server",
    "/.well-known/openid-configuration",
    "/register",
    "/authorize",
    "/token",
)
"""Where OAuth clients look after a 401; answered with 404 and the fix, without a token."""


class TokenConfigError(ValueError):
    """ROOFLENS_TOKEN is set but unusable."""


def read_token(environ: Mapping[str, str]) -> str | None:
    """The configured token, None when unset; empty or unsendable values are errors, never
    "no auth" (an empty `ROOFLENS_TOKEN=` used to switch authentication off)."""
    raw = environ.get(TOKEN_ENV)
    if raw is None:
        return None
    token = raw.strip()
    if not token:
        raise TokenConfigError(f"{TOKEN_ENV} is set but empty; set it to a secret or unset it")
    if not all("\x21" <= c <= "\x7e" for c in token):
        raise TokenConfigError(
            f"{TOKEN_ENV} must be printable ASCII without spaces (it travels in an HTTP header)"
        )
    return token


class StaticTokenVerifier:
    """The SDK `TokenVerifier` for one shared secret, compared in constant time."""

    def __init__(self, token: str) -> None:
        self._expected = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        given = token.encode("utf-8", "surrogateescape")
        if not hmac.compare_digest(given, self._expected):
            return None
        return AccessToken(token=token, client_id=TOKEN_CLIENT_ID, scopes=[])


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def unauthorized(authorization: str | None) -> tuple[dict[str, str], bytes]:
    """Headers and JSON-RPC body of the 401 for this `Authorization` header value."""
    if authorization is None:
        challenge, why = 'Bearer realm="rooflens"', "rooflens needs a bearer token"
    else:
        if authorization.lower().startswith("bearer "):
            why = "rooflens refused the bearer token"
        else:
            why = "the Authorization header is not a bearer token"
        challenge = (
            f'Bearer realm="rooflens", error="invalid_token", error_description={_quoted(why)}'
        )
    message = f"{why}: {FIX} ({NO_OAUTH})"
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": UNAUTHORIZED_CODE, "message": message}}
    headers = {"content-type": "application/json", "www-authenticate": challenge}
    return headers, json.dumps(body).encode()


async def _respond(send: Send, status: int, headers: dict[str, str], body: bytes) -> None:
    raw = [(k.encode(), v.encode()) for k, v in headers.items()]
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def is_oauth_path(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in OAUTH_PATHS)


class _RequireToken:
    """Let through only requests the bearer backend authenticated; the rest get our 401."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" or isinstance(scope.get("user"), AuthenticatedUser):
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        headers, body = unauthorized(Headers(scope=scope).get("authorization"))
        await _respond(send, 401, headers, body)


class _NoOAuth:
    """Answer OAuth discovery and registration paths with 404 and the fix, before auth."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_oauth_path(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        body = {"error": "not_found", "error_description": f"{NO_OAUTH}: {FIX}"}
        await _respond(send, 404, {"content-type": "application/json"}, json.dumps(body).encode())


def require_token(app: ASGIApp, token: str) -> ASGIApp:
    """`app` behind the token: every route needs it except the OAuth paths (404 + the fix).

    Every route, not just `/mcp`: a route someone adds later is then private by default.
    """
    gated = AuthContextMiddleware(_RequireToken(app))
    backend = BearerAuthBackend(StaticTokenVerifier(token))
    return _NoOAuth(AuthenticationMiddleware(gated, backend=backend))
