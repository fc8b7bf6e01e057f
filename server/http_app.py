"""The streamable-HTTP app of `rooflens serve --http`: which Host and Origin values it accepts,
when it needs a token, and CORS for named browser origins.

Host/Origin checks are the SDK's own (`TransportSecuritySettings`), fed only exact values: its
`host:*` patterns are prefix matches, so `127.0.0.1:*` lets `127.0.0.1:8765.evil.example`
through. The accepted Host values follow the bind address:

* loopback (127.0.0.1, ::1, localhost): `127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT`
  (and the bind address, say 127.0.0.2);
* one interface address or name: that `HOST:PORT`;
* all interfaces (0.0.0.0, ::): the loopback names plus this machine's name and the addresses
  it can find for itself (the name's addresses and the default-route source address); the
  list is printed on start-up and `--allowed-host` adds any other (a DNS name, a NAT address);
* plus each `--allowed-host HOST[:PORT]`; a bare HOST accepts `HOST` (a proxy on the default
  port) and `HOST:PORT` (direct).

Origins: `http://` and `https://` of every accepted Host (a same-origin page), each
`--allowed-origin`, each `--cors-origin`; a request without Origin (any non-browser client)
passes. Anything that admits another machine (a non-loopback bind, Host or origin) needs the
token: DNS-rebinding checks stop browsers, not a LAN neighbour with curl.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import socket
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp

from .http_auth import TOKEN_ENV, require_token
from .settings import MCP_PATH

WILDCARDS = ("0.0.0.0", "::")
_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?")
_DEFAULT_PORTS = {"http": 80, "https": 443}


class HttpConfigError(ValueError):
    """The HTTP options cannot be served safely or are malformed (one line, names the fix)."""


@dataclass(frozen=True)
class HttpOptions:
    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    allowed_hosts: list[str] = field(default_factory=list)
    allowed_origins: list[str] = field(default_factory=list)
    cors_origins: list[str] = field(default_factory=list)


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def is_loopback(host: str) -> bool:
    ip = _ip(host)
    return host.lower() == "localhost" if ip is None else ip.is_loopback


def _netloc(host: str, port: int | None) -> str:
    """`host[:port]` as it appears in a Host header or URL (IPv6 in brackets)."""
    ip = _ip(host)
    shown = f"[{ip}]" if ip is not None and ip.version == 6 else str(ip or host.lower())
    return shown if port is None else f"{shown}:{port}"


def _split_host(value: str, what: str) -> tuple[str, int | None]:
    """`HOST`, `HOST:PORT`, `[V6]`, `[V6]:PORT` or a bare IPv6 address -> (host, port)."""
    text = value.strip().lower()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else None
        if rest and port_text is None:
            raise HttpConfigError(f"{what} {value!r}: expected [ADDRESS]:PORT")
    elif text.count(":") > 1:
        host, port_text = text, None
    else:
        host, _, port_text = text.partition(":")
        port_text = port_text if ":" in text else None
    bad_port = port_text is not None and not port_text.isdigit()
    if bad_port or (_ip(host) is None and not _NAME.fullmatch(host)):
        raise HttpConfigError(f"{what} {value!r} is not a host name or address (HOST[:PORT])")
    if port_text is None:
        return host, None
    if not 0 < int(port_text) < 65536:
        raise HttpConfigError(f"{what} {value!r}: the port must be 1-65535")
    return host, int(port_text)


def _parse_origin(value: str, what: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of an origin; the port is None when it is the scheme's default."""
    parts = urlsplit(value.strip())
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.netloc or "@" in parts.netloc:
        raise HttpConfigError(f"{what} {value!r} must be http(s)://HOST[:PORT]")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise HttpConfigError(f"{what} {value!r} must be an origin, without a path")
    host, port = _split_host(parts.netloc, what)
    return scheme, host, None if port == _DEFAULT_PORTS[scheme] else port


def _origin(value: str, what: str) -> str:
    """The origin as browsers send it: lower case, default port dropped."""
    scheme, host, port = _parse_origin(value, what)
    return f"{scheme}://{_netloc(host, port)}"


def _own_addresses(bind: str) -> list[str]:
    """Best effort: this machine's name and the addresses it finds for itself, for a bind on
    every interface. Python has no portable interface listing; misses go via --allowed-host."""
    families = [socket.AF_INET] if bind == "0.0.0.0" else [socket.AF_INET, socket.AF_INET6]
    name = socket.gethostname()
    found = [name] if _NAME.fullmatch(name.lower()) else []
    for family in families:
        with contextlib.suppress(OSError):
            found += [info[4][0] for info in socket.getaddrinfo(name, None, family)]
        probe = "192.0.2.1" if family == socket.AF_INET else "2001:db8::1"  # documentation nets
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.connect((probe, 9))  # UDP connect picks a route and sends nothing
                found.append(s.getsockname()[0])
        except OSError:
            pass
    return [a.split("%")[0] for a in found]  # drop IPv6 zone ids


def accepted_hosts(options: HttpOptions) -> list[str]:
    """Exact Host header values the server answers, in a stable order."""
    port, bind = options.port, options.host
    if is_loopback(bind):
        bases = ["127.0.0.1", "localhost", "::1", bind]  # bind: e.g. 127.0.0.2
    elif bind in WILDCARDS:
        bases = ["127.0.0.1", "localhost", "::1", *_own_addresses(bind)]
    else:
        bases = [bind]
    hosts = [_netloc(h, port) for h in bases]
    for value in options.allowed_hosts:
        host, given = _split_host(value, "--allowed-host")
        hosts += [_netloc(host, given)] if given else [_netloc(host, None), _netloc(host, port)]
    return list(dict.fromkeys(hosts))


def accepted_origins(options: HttpOptions, hosts: list[str]) -> list[str]:
    origins = []
    for value in hosts:
        host, port = _split_host(value, "host")
        for scheme, default in _DEFAULT_PORTS.items():
            origins.append(f"{scheme}://{_netloc(host, None if port == default else port)}")
    origins += [_origin(o, "--allowed-origin") for o in options.allowed_origins]
    origins += [_origin(o, "--cors-origin") for o in options.cors_origins]
    return list(dict.fromkeys(origins))


def check_exposure(options: HttpOptions) -> None:
    """Refuse to serve another machine without a token; names what exposed it and the fix."""
    if options.token is not None:
        return
    exposed = [] if is_loopback(options.host) else [f"--host {options.host}"]
    exposed += [
        f"--allowed-host {h}"
        for h in options.allowed_hosts
        if not is_loopback(_split_host(h, "--allowed-host")[0])
    ]
    for flag, values in (
        ("--allowed-origin", options.allowed_origins),
        ("--cors-origin", options.cors_origins),
    ):
        exposed += [f"{flag} {v}" for v in values if not is_loopback(_parse_origin(v, flag)[1])]
    if exposed:
        raise HttpConfigError(
            f"{exposed[0]} lets other machines in: set {TOKEN_ENV} to a secret "
            "(clients send 'Authorization: Bearer <token>') or serve on 127.0.0.1 only"
        )


@dataclass(frozen=True)
class HttpApp:
    app: ASGIApp
    url: str
    hosts: list[str]
    origins: list[str]


def build_http_app(server: MCPServer, options: HttpOptions) -> HttpApp:
    """The ASGI app to run, or HttpConfigError before anything is bound."""
    if not 0 < options.port < 65536:
        raise HttpConfigError(f"--port {options.port}: the port must be 1-65535")
    check_exposure(options)
    hosts = accepted_hosts(options)
    origins = accepted_origins(options, hosts)
    security = TransportSecuritySettings(allowed_hosts=hosts, allowed_origins=origins)
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=MCP_PATH, transport_security=security, host=options.host
    )
    if options.token is not None:
        app = require_token(app, options.token)
    if options.cors_origins:
        app = CORSMiddleware(
            app,
            allow_origins=[_origin(o, "--cors-origin") for o in options.cors_origins],
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["*"],  # Authorization, Mcp-Session-Id, Mcp-Protocol-Version, Mcp-Param-*
            expose_headers=["Mcp-Session-Id", "Mcp-Protocol-Version", "WWW-Authenticate"],
        )
    url = f"http://{_shown(options, hosts)}{MCP_PATH}"
    return HttpApp(app=app, url=url, hosts=hosts, origins=origins)


def _shown(options: HttpOptions, hosts: list[str]) -> str:
    """The netloc of the start-up URL: the bind address, or for a wildcard bind the first
    address another machine could use (127.0.0.1 when none was found)."""
    if options.host not in WILDCARDS:
        return _netloc(options.host, options.port)
    for value in hosts:
        host = _split_host(value, "host")[0]
        if _ip(host) is not None and not is_loopback(host):
            return value
    return hosts[0]
