"""The HTTP rules without a socket: refusals before binding (exit code 2, one line naming the
fix), the exact Host/Origin lists, the token checks."""

from __future__ import annotations

import pytest
import uvicorn
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings

from rooflens.cli.main import main
from rooflens.server import http_app
from rooflens.server.http_app import (
    HttpConfigError,
    HttpOptions,
    accepted_hosts,
    accepted_origins,
    check_exposure,
)
from rooflens.server.http_auth import (
    StaticTokenVerifier,
    TokenConfigError,
    is_oauth_path,
    read_token,
    unauthorized,
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def no_bind(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal must come before uvicorn; if it does not, fail instead of serving forever."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the server would have started")

    monkeypatch.setattr(uvicorn, "run", refuse)
    monkeypatch.delenv("ROOFLENS_TOKEN", raising=False)


def refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["serve", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rooflens: ")
    return err


@pytest.mark.usefixtures("no_bind")
@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "myhost.lan"])
def test_a_non_loopback_bind_needs_the_token(capsys, tmp_path, host: str) -> None:
    err = refusal(capsys, "--http", "--host", host, "--allow-dir", str(tmp_path))
    assert f"--host {host} lets other machines in: set ROOFLENS_TOKEN" in err


@pytest.mark.usefixtures("no_bind")
@pytest.mark.parametrize(
    "flag",
    [
        ["--allowed-host", "proxy.example"],
        ["--allowed-origin", "https://proxy.example"],
        ["--cors-origin", "https://app.example"],
    ],
)
def test_admitting_another_machine_on_loopback_needs_the_token(capsys, tmp_path, flag) -> None:
    err = refusal(capsys, "--http", *flag, "--allow-dir", str(tmp_path))
    assert f"{flag[0]} {flag[1]} lets other machines in: set ROOFLENS_TOKEN" in err


@pytest.mark.usefixtures("no_bind")
@pytest.mark.parametrize("value", ["", "   ", "\t\n"])
def test_an_empty_token_is_an_error_not_no_auth(capsys, monkeypatch, tmp_path, value) -> None:
    monkeypatch.setenv("ROOFLENS_TOKEN", value)
    err = refusal(capsys, "--http", "--allow-dir", str(tmp_path))
    assert "ROOFLENS_TOKEN is set but empty" in err


@pytest.mark.usefixtures("no_bind")
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--allowed-host", "http://x.example"], "is not a host name or address"),
        (["--allowed-host", "x.example:99999"], "the port must be 1-65535"),
        (["--cors-origin", "*"], "must be http(s)://HOST[:PORT]"),
        (["--allowed-origin", "https://x.example/app"], "must be an origin, without a path"),
        (["--port", "0"], "the port must be 1-65535"),
    ],
)
def test_malformed_options_are_refused(capsys, monkeypatch, tmp_path, argv, expected) -> None:
    monkeypatch.setenv("ROOFLENS_TOKEN", "t0ken")
    assert expected in refusal(capsys, "--http", *argv, "--allow-dir", str(tmp_path))


@pytest.mark.usefixtures("no_bind")
def test_http_options_without_http_are_refused(capsys, tmp_path) -> None:
    err = refusal(capsys, "--cors-origin", "http://localhost:3000", "--allow-dir", str(tmp_path))
    assert "--cors-origin applies to HTTP only: add --http" in err


def test_token_values() -> None:
    assert read_token({}) is None
    assert read_token({"ROOFLENS_TOKEN": " abc-123\n"}) == "abc-123"
    with pytest.raises(TokenConfigError, match="printable ASCII without spaces"):
        read_token({"ROOFLENS_TOKEN": "two words"})


@pytest.mark.anyio
async def test_the_verifier_accepts_only_the_exact_token() -> None:
    verifier = StaticTokenVerifier("s3cret")
    accepted = await verifier.verify_token("s3cret")
    assert accepted is not None and accepted.client_id == "rooflens-token"
    for wrong in ("s3cre", "s3cret ", "S3CRET", "", "s3cret\udcff"):
        assert await verifier.verify_token(wrong) is None


def test_the_401_names_the_header_and_never_oauth_metadata() -> None:
    for given in (None, "Bearer x", "Basic x"):
        headers, body = unauthorized(given)
        assert headers["www-authenticate"].startswith('Bearer realm="rooflens"')
        assert "resource_metadata" not in headers["www-authenticate"]
        assert b"set the Authorization header" in body
    assert is_oauth_path("/.well-known/oauth-protected-resource/mcp")
    assert is_oauth_path("/register")
    assert not is_oauth_path("/mcp") and not is_oauth_path("/registered")


def test_loopback_hosts_are_exact_and_carry_the_port() -> None:
    hosts = accepted_hosts(HttpOptions(host="127.0.0.1", port=8765))
    assert hosts == ["127.0.0.1:8765", "localhost:8765", "[::1]:8765"]
    assert accepted_hosts(HttpOptions(host="localhost", port=1)) == [
        "127.0.0.1:1",
        "localhost:1",
        "[::1]:1",
    ]
    assert accepted_hosts(HttpOptions(host="127.0.0.2", port=1))[-1] == "127.0.0.2:1"


def test_allowed_hosts_with_and_without_a_port() -> None:
    options = HttpOptions(
        host="10.1.2.3",
        port=8765,
        allowed_hosts=["Proxy.Example", "10.9.9.9:443", "[FE80::1]:99", "fe80::2"],
    )
    assert accepted_hosts(options) == [
        "10.1.2.3:8765",
        "proxy.example",
        "proxy.example:8765",
        "10.9.9.9:443",
        "[fe80::1]:99",
        "[fe80::2]",
        "[fe80::2]:8765",
    ]


def test_a_wildcard_bind_accepts_loopback_and_the_addresses_found(monkeypatch) -> None:
    monkeypatch.setattr(http_app, "_own_addresses", lambda bind: ["box", "192.168.1.20"])
    options = HttpOptions(host="0.0.0.0", port=80, token="t", allowed_hosts=["nat.example:8080"])
    assert accepted_hosts(options) == [
        "127.0.0.1:80",
        "localhost:80",
        "[::1]:80",
        "box:80",
        "192.168.1.20:80",
        "nat.example:8080",
    ]
    app = http_app.build_http_app(http_app.MCPServer("t"), options)
    assert app.url == "http://192.168.1.20:80/mcp"


def test_origins_follow_the_hosts_plus_the_named_ones() -> None:
    options = HttpOptions(
        port=443,
        token="t",
        allowed_origins=["HTTPS://Proxy.Example:443/"],
        cors_origins=["http://app.example:3000"],
    )
    origins = accepted_origins(options, accepted_hosts(options))
    assert origins[:2] == ["http://127.0.0.1:443", "https://127.0.0.1"]
    assert origins[-2:] == ["https://proxy.example", "http://app.example:3000"]
    assert "http://[::1]:443" in origins


def test_the_sdk_check_with_our_lists_is_exact() -> None:
    """The SDK's own matcher, fed our lists: no prefix match survives."""
    options = HttpOptions(port=8765)
    hosts = accepted_hosts(options)
    settings = TransportSecuritySettings(
        allowed_hosts=hosts, allowed_origins=accepted_origins(options, hosts)
    )
    check = TransportSecurityMiddleware(settings)
    assert check._validate_host("127.0.0.1:8765")
    assert check._validate_origin("http://localhost:8765")
    for host in ("127.0.0.1:8765.evil.example", "127.0.0.1:87650", "127.0.0.1", "evil:8765"):
        assert not check._validate_host(host)
    assert not check._validate_origin("http://127.0.0.1:8765.evil.example")


def test_check_exposure_passes_loopback_names_without_a_token() -> None:
    check_exposure(
        HttpOptions(
            allowed_hosts=["localhost:9000", "[::1]"],
            cors_origins=["http://localhost:6274"],
        )
    )
    with pytest.raises(HttpConfigError, match=r"--allowed-host 10\.0\.0\.1 lets other machines in"):
        check_exposure(HttpOptions(allowed_hosts=["10.0.0.1"]))
