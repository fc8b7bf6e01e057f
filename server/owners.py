"""Who owns a run or a job, and the handles that name them to their owner.

Over HTTP without `--shared-workspace`, what a request makes is visible and usable only to its
owner (docs/security.md#http):

* a handshake-era client (protocol 2025-11-25 and before) owns through its session: the SDK
  routes each request to the session its `Mcp-Session-Id` names, and only with the credential
  that opened it;
* a stateless client (2026-07-28) has no session, so every tool call of one that makes runs
  mints a fresh 128-bit key, and what it makes is handed back named with it:
  `run-3f9a1c2b7d4e-<32 hex digits>` (a job and its ranks' runs share one key). The handle is
  the capability: later calls and resource URIs present it, the plain id alone is refused;
* runs made over stdio, in memory or by the CLI record no owner, and no HTTP caller sees them.

The workspace index and `run.json` record only tags (SHA-256 of a session id or of a key),
never the secret itself. The bearer token does not tell clients apart: every holder of
ROOFLENS_TOKEN is one principal, so it cannot be what separates their runs.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

KEY_BYTES = 16
HANDLE = re.compile(r"(?P<id>(?P<kind>run|job)-[0-9a-f]{12})(?:-(?P<key>[0-9a-f]{32}))?")


def split_handle(handle: str, kind: str) -> tuple[str, str | None] | None:
    """(id, key) of a `kind` ("run" or "job") handle, with or without a key; None when
    `handle` is not shaped like one."""
    found = HANDLE.fullmatch(handle)
    if found is None or found["kind"] != kind:
        return None
    return found["id"], found["key"]


def with_key(claimed: str, key: str | None) -> str:
    """The handle of the id `claimed` for whoever holds `key` (the id itself without one)."""
    return claimed if key is None else f"{claimed}-{key}"


def _tag(kind: str, secret: str) -> str:
    return f"{kind}:{hashlib.sha256(secret.encode()).hexdigest()}"


@dataclass(frozen=True)
class Owner:
    """Who a request is, as far as runs go: `tag` is what its new runs and jobs record as
    their owner; `key` the capability they are handed out with (stateless HTTP callers);
    `isolated` whether it sees only what it owns (HTTP without a shared workspace)."""

    tag: str | None = None
    key: str | None = field(default=None, repr=False)
    isolated: bool = False

    @classmethod
    def of_request(cls, headers: Mapping[str, str] | None, isolate: bool) -> Owner:
        """The owner of an HTTP request: its session for a handshake-era request (the SDK
        has checked the session id and the credential), else a fresh key. The era is read
        as the SDK routes it: a protocol-version header outside the handshake versions goes
        to the stateless entry, where an Mcp-Session-Id header is nobody's."""
        if not isolate:
            return cls()
        version = headers.get("mcp-protocol-version") if headers else None
        handshake = version is None or version in HANDSHAKE_PROTOCOL_VERSIONS
        session = headers.get("mcp-session-id") if headers and handshake else None
        if session:
            return cls(tag=_tag("session", session), isolated=True)
        key = secrets.token_hex(KEY_BYTES)
        return cls(tag=_tag("key", key), key=key, isolated=True)

    def may_use(self, recorded: object, key: str | None) -> bool:
        """Whether a run or job whose owner tag is `recorded` is this caller's: always when
        not isolated; else the key of the handle it gave must be the one the run was made
        with, or (no key given) the run must be its session's. Runs that record no owner
        (stdio, CLI) are no HTTP caller's."""
        if not self.isolated:
            return True
        claim = self.tag if key is None else _tag("key", key)
        if claim is None or not isinstance(recorded, str):
            return False
        return hmac.compare_digest(claim, recorded)

    def lists(self, recorded: object) -> bool:
        """Whether listings show a run whose owner tag is `recorded`: a session's runs to
        that session; a stateless caller has nothing to be listed by, so nothing."""
        return not self.isolated or (self.key is None and recorded == self.tag)
