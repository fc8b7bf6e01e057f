"""What a server is configured with, and what its lifespan holds while it runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .owners import Owner
from .paths import PathPolicy
from .runs import RunStore
from .settings import DEFAULT_MAX_RESULT_BYTES, WORKSPACE_NAME


@dataclass(frozen=True)
class ServerConfig:
    """`serve`'s options. A workspace defaults to `rooflens_runs/` in the first allowed
    directory; under HTTP each run is visible only to its owner (the session or stateless
    caller that made it) unless `shared_workspace`."""

    allowed_dirs: list[Path]
    workspace: Path | None = None
    shared_workspace: bool = False
    http: bool = False
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES

    def __post_init__(self) -> None:
        if self.max_result_bytes < 4096:
            raise ValueError("the result size limit must be at least 4096 bytes")


@dataclass
class AppState:
    """What the lifespan yields to every handler."""

    config: ServerConfig
    policy: PathPolicy
    runs: RunStore
    # logging/setLevel per handshake-era connection (notify.remember_level)
    log_levels: dict[int, str] = field(default_factory=dict)

    @classmethod
    def build(cls, config: ServerConfig) -> AppState:
        policy = PathPolicy(config.allowed_dirs)
        workspace = config.workspace or policy.allowed[0] / WORKSPACE_NAME
        return cls(config, policy, RunStore(policy, Path(workspace)))

    @property
    def isolate(self) -> bool:
        """Whether a run is visible only to its owner (HTTP without a shared workspace)."""
        return self.config.http and not self.config.shared_workspace

    def owner(self, headers: Mapping[str, str] | None) -> Owner:
        """Who a request is, as far as runs go (server/owners.py): over isolated HTTP its
        session, or for a stateless client a fresh key; else the one local client."""
        return Owner.of_request(headers, self.isolate)

    @property
    def payload_budget(self) -> int:
        """Bytes a tool's structured result may take: the text copy doubles it on the wire."""
        return self.config.max_result_bytes // 2 - 512
