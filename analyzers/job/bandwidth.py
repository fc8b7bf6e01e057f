"""Algorithm and bus bandwidth of matched collectives whose sizes the trace records, against
the platform's interconnect (docs/multirank.md#bandwidth).

Algorithm bandwidth is the collective's full message over its transfer time; bus bandwidth
scales it by the share of the message each rank must send over its own link for that
collective (the nccl-tests convention), so it compares directly with one GPU's link figure.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..perf.dtypes import BYTES_PER_ELEMENT
from ..perf.platforms import Platform

NODE_GPUS = 8  # a group of up to this many ranks is taken to sit in one node
# c10d's ScalarType names whose lower-case spelling is not a key of BYTES_PER_ELEMENT
_SCALAR_TYPES = {
    "byte": "unsigned char",
    "char": "signed char",
    "complexfloat": "c10::complex<float>",
}

COLUMNS = (
    "collective_id",
    "name",
    "group_size",
    "dtype",
    "msg_bytes",
    "comm_latency",
    "algbw_gbps",
    "busbw_gbps",
    "link",
    "link_gbps",
    "link_pct",
)


def bus_factor(name: str, ranks: int) -> float | None:
    """What each rank moves over its link per byte of the full message (None: unknown)."""
    if ranks < 1:
        return None
    key = name.lower().replace("_", "")
    share = (ranks - 1) / ranks
    if "allreduce" in key:
        return 2 * share
    if "allgather" in key or "reducescatter" in key or key == "alltoall":
        return share
    return None


def element_bytes(dtype: str) -> float | None:
    """Bytes per element of a c10d dtype name ("Float", "BFloat16", ...), None if unknown."""
    key = dtype.lower()
    key = _SCALAR_TYPES.get(key, key)
    return BYTES_PER_ELEMENT.get(key, BYTES_PER_ELEMENT.get(f"c10::{key}"))


def link_of(platform: Platform | None, ranks: int, node_gpus: int = NODE_GPUS):
    """The link a collective over `ranks` GPUs crosses: the GPU link within a node, the
    network beyond it (None when the platform records neither)."""
    if platform is None:
        return None
    return platform.gpu_link if ranks <= node_gpus else platform.network_link


def collective_bandwidth(
    collectives: pd.DataFrame, platform: Platform | None, node_gpus: int = NODE_GPUS
) -> pd.DataFrame:
    """One row per matched collective whose kind, dtype and size are known (COLUMNS): the
    recorded c10d fields, else what its operator or kernel says (job/collective_kinds.py).

    The transfer time is `comm_latency` (the shortest kernel of the collective, the rank
    that waited least); GB/s are 1e9 bytes per second; `link_pct` is the bus bandwidth as a
    percent of the link's one-way figure.
    """
    rows = []
    for c in collectives.itertuples(index=False):
        ranks = int(c.group_size) if c.group_size > 0 else int(c.ranks)
        factor = bus_factor(str(c.kind), ranks)
        size = element_bytes(str(c.msg_dtype)) if c.msg_dtype else None
        nelems = int(c.msg_nelems)
        if factor is None or size is None or nelems < 0 or not c.comm_latency > 0:
            continue
        msg = nelems * size
        algbw = msg / (float(c.comm_latency) * 1e3)  # bytes per µs / 1e3 = GB/s
        link = link_of(platform, ranks, node_gpus)
        one_way = link.one_way_gbps() if link is not None else np.nan
        rows.append(
            {
                "collective_id": int(c.collective_id),
                "name": str(c.kind),
                "group_size": ranks,
                "dtype": str(c.msg_dtype),
                "msg_bytes": msg,
                "comm_latency": float(c.comm_latency),
                "algbw_gbps": algbw,
                "busbw_gbps": algbw * factor,
                "link": link.kind if link is not None else "",
                "link_gbps": one_way,
                "link_pct": 100.0 * algbw * factor / one_way if link is not None else np.nan,
            }
        )
    return pd.DataFrame(rows, columns=list(COLUMNS))
