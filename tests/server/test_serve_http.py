"""`rooflens serve --http` as a real process on 127.0.0.1 (a free port): the token, the 401 a
client sees without it, exact Host/Origin matching, a LAN Host named by --allowed-host, CORS."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anyio
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp.shared.auth import OAuthClientMetadata

from tests.helpers.http_server import BEARER, TOKEN, Served, start, stop

pytestmark = pytest.mark.slow  # servers started as processes

LAN = "10.1.2.3"
APP_ORIGIN = "http://app.example:3000"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Served]:
    """One server for the module: token set, a LAN Host allowed, one CORS origin."""
    tmp = tmp_path_factory.mktemp("serve")
    proc, served = start(tmp, "--allowed-host", f"{LAN}:PORT", "--cors-origin", APP_ORIGIN)
    yield served
    stop(proc)


def sdk_client(url: str, **headers: str) -> Client:
    return Client(streamable_http_client(url, http_client=create_mcp_http_client(headers=headers)))


async def post(url: str, headers: dict[str, str], body: object = INIT) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=20) as http:
        return await http.post(url, headers=headers, content=json.dumps(body))


def rpc_message(response: httpx2.Response) -> str:
    """The JSON-RPC error message of a refused request (the body must be a JSON-RPC error)."""
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    return body["error"]["message"]


def test_start_up_line_names_the_endpoint(server: Served) -> None:
    first = server.stderr.read_text().splitlines()[0]
    assert first == (
        f"rooflens: serving MCP over streamable HTTP at {server.url} (bearer token required)"
    )


@pytest.mark.anyio
async def test_the_right_token_works_end_to_end(server: Served) -> None:
    with anyio.fail_after(30):
        async with sdk_client(server.url, Authorization=f"Bearer {TOKEN}") as client:
            names = {t.name for t in (await client.list_tools()).tools}
    assert {"load_trace", "run_full_analysis"} <= names


@pytest.mark.anyio
async def test_a_missing_token_gets_a_bearer_challenge_without_oauth(server: Served) -> None:
    response = await post(server.url, MCP_HEADERS)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="rooflens"'
    message = rpc_message(response)
    assert message.startswith("rooflens needs a bearer token: set the Authorization header")
    assert "ROOFLENS_TOKEN" in message and "does not use OAuth" in message


@pytest.mark.anyio
async def test_a_wrong_token_is_told_apart(server: Served) -> None:
    for given, why in (
        ("Bearer not-the-token", "rooflens refused the bearer token"),
        (f"Basic {TOKEN}", "the Authorization header is not a bearer token"),
    ):
        response = await post(server.url, {**MCP_HEADERS, "authorization": given})
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == (
            f'Bearer realm="rooflens", error="invalid_token", error_description="{why}"'
        )
        assert rpc_message(response).startswith(f"{why}: set the Authorization header")


@pytest.mark.anyio
async def test_the_sdk_client_without_a_token_reports_the_fix(server: Served) -> None:
    with anyio.fail_after(30), pytest.raises(BaseException) as caught:
        async with Client(server.url) as client:
            await client.list_tools()
    errors = caught.value.exceptions if isinstance(caught.value, BaseExceptionGroup) else []
    while errors and isinstance(errors[0], BaseExceptionGroup):
        errors = errors[0].exceptions
    error = errors[0] if errors else caught.value
    assert isinstance(error, MCPError)
    assert "set the Authorization header to 'Bearer <token>'" in str(error)


class _NoStorage:
    async def get_tokens(self) -> None:
        return None

    async def set_tokens(self, tokens: object) -> None:
        pass

    async def get_client_info(self) -> None:
        return None

    async def set_client_info(self, info: object) -> None:
        pass


@pytest.mark.anyio
async def test_an_oauth_client_ends_on_the_fix_not_a_bare_404(server: Served) -> None:
    async def no_browser(url: str) -> None:
        raise AssertionError(f"OAuth went as far as authorization: {url}")

    async def no_callback() -> tuple[str, str | None]:
        raise AssertionError("OAuth went as far as the callback")

    provider = OAuthClientProvider(
        server_url=server.url,
        client_metadata=OAuthClientMetadata(redirect_uris=["http://localhost:1/cb"]),
        storage=_NoStorage(),
        redirect_handler=no_browser,
        callback_handler=no_callback,
    )
    http = create_mcp_http_client(auth=provider)
    with anyio.fail_after(30), pytest.raises(BaseException) as caught:
        async with Client(streamable_http_client(server.url, http_client=http)) as client:
            await client.list_tools()
    text = repr(caught.value)
    assert "Registration failed: 404" in text
    assert "rooflens does not use OAuth: set the Authorization header" in text


@pytest.mark.anyio
async def test_a_lan_host_named_by_allowed_host_is_served(server: Served) -> None:
    lan = f"{LAN}:{server.port}"
    with anyio.fail_after(30):
        async with sdk_client(server.url, Authorization=f"Bearer {TOKEN}", Host=lan) as client:
            names = {t.name for t in (await client.list_tools()).tools}
    assert "load_trace" in names
    response = await post(server.url, {**MCP_HEADERS, **BEARER, "host": lan})
    assert response.status_code == 200 and response.headers["mcp-session-id"]


@pytest.mark.anyio
async def test_prefix_spoofed_host_and_origin_are_refused(server: Served) -> None:
    spoofed = f"127.0.0.1:{server.port}.evil.example"
    response = await post(server.url, {**MCP_HEADERS, **BEARER, "host": spoofed})
    assert (response.status_code, response.text) == (421, "Invalid Host header")
    for origin in (f"http://{spoofed}", f"http://{LAN}:{server.port}.evil.example"):
        response = await post(server.url, {**MCP_HEADERS, **BEARER, "origin": origin})
        assert (response.status_code, response.text) == (403, "Invalid Origin header")
    same_origin = {**MCP_HEADERS, **BEARER, "origin": f"http://127.0.0.1:{server.port}"}
    assert (await post(server.url, same_origin)).status_code == 200


@pytest.mark.anyio
async def test_cors_preflight_only_for_the_named_origin(server: Served) -> None:
    ask = {
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type, mcp-session-id",
    }
    async with httpx2.AsyncClient(timeout=20) as http:
        named = await http.options(server.url, headers={**ask, "origin": APP_ORIGIN})
        other = await http.options(server.url, headers={**ask, "origin": "http://other.example"})
    assert named.status_code == 200
    assert named.headers["access-control-allow-origin"] == APP_ORIGIN
    assert "POST" in named.headers["access-control-allow-methods"]
    assert "mcp-session-id" in named.headers["access-control-allow-headers"]
    assert other.status_code == 400
    assert "access-control-allow-origin" not in other.headers


@pytest.mark.anyio
async def test_cors_responses_expose_the_session_id_and_the_challenge(server: Served) -> None:
    browser = {**MCP_HEADERS, "origin": APP_ORIGIN}
    refused = await post(server.url, browser)
    assert refused.status_code == 401
    assert refused.headers["access-control-allow-origin"] == APP_ORIGIN
    served = await post(server.url, {**browser, **BEARER})
    assert served.status_code == 200
    exposed = served.headers["access-control-expose-headers"].lower()
    assert "mcp-session-id" in exposed and "www-authenticate" in exposed


@pytest.mark.anyio
async def test_loopback_without_a_token_stays_open_to_this_machine_only(tmp_path) -> None:
    proc, served = start(tmp_path, token=None)
    try:
        ok = await post(served.url, MCP_HEADERS)
        lan = await post(served.url, {**MCP_HEADERS, "host": f"{LAN}:{served.port}"})
    finally:
        stop(proc)
    assert ok.status_code == 200
    assert lan.status_code == 421
    assert "(no token: this machine only)" in served.stderr.read_text()
