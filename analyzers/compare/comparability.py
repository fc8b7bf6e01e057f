"""Whether two traces are like for like, said before anything is ranked
(docs/compare.md#comparability).

From each trace: its job (world size and rank, `distributedInfo`), how it ran (eager,
compiled by torch.compile, replayed as CUDA/HIP graphs), the precision of its matrix kernels
(the one holding most of their time), its GPU, the profiler's versions, and the input shapes
of trace 1's top operators. Each difference costs the score a fixed amount and is said as a
reason; 100 is like for like. A pair of jobs of different sizes also keeps collectives out of
the "What changed" headline: communication differs there by construction.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from ..perf.kernel_precision import read_kernel
from ..trace.model import TraceModel
from ..trace.schema import LAUNCH_CATEGORIES

Mode = Literal["eager", "compiled", "graph replay", "compiled, graph replay"]
COMPILED_OPS = ("CompiledFunction", "Torch-Compiled Region", "torch-compiled-region")
GRAPH_LAUNCHES = ("cudaGraphLaunch", "hipGraphLaunch")
TOP_OPERATORS = 5
# what each difference costs the score (100: like for like)
COSTS = {
    "world": 30,
    "mode": 20,
    "precision": 15,
    "shapes": 10,  # per top operator run on other shapes, at most SHAPES_MAX
    "device": 5,
    "profiler": 5,
}
SHAPES_MAX = 20


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TraceFacts(Frozen):
    world_size: int | None
    rank: int | None
    mode: Mode
    precision: str  # of the matrix kernels' time ("unknown" when there are none)
    device: str  # trace text
    profiler: str  # the runtime and tracer versions the trace records


class Comparability(Frozen):
    score: int
    reasons: list[str]  # trace text in operator names: rendered by the caller
    trace1: TraceFacts
    trace2: TraceFacts

    @property
    def same_job_size(self) -> bool:
        return self.trace1.world_size == self.trace2.world_size


def comparability(model1: TraceModel, model2: TraceModel) -> Comparability:
    one, two = facts(model1), facts(model2)
    reasons: list[str] = []
    score = 100
    if one.world_size != two.world_size:
        score -= COSTS["world"]
        reasons.append(
            f"trace 1 is {_job(one)}, trace 2 {_job(two)}: differences in communication and "
            "dispatch are expected, and collectives are left out of the headline"
        )
    if one.mode != two.mode:
        score -= COSTS["mode"]
        reasons.append(
            f"trace 1 ran {one.mode}, trace 2 {two.mode}: kernels, launches and copies differ "
            "by construction"
        )
    if one.precision != two.precision and "unknown" not in (one.precision, two.precision):
        score -= COSTS["precision"]
        reasons.append(
            f"trace 1's matrix kernels run {one.precision}, trace 2's {two.precision}: their "
            "times are not like for like"
        )
    shapes = _shape_changes(model1, model2)
    if shapes:
        score -= min(SHAPES_MAX, COSTS["shapes"] * len(shapes))
        reasons.append(
            "top operators run other shapes (another batch or sequence length?): "
            + "; ".join(shapes)
        )
    if one.device != two.device:
        score -= COSTS["device"]
        reasons.append(f"different GPUs ({one.device} and {two.device}): kernel times differ")
    if one.profiler != two.profiler and one.device == two.device:
        score -= COSTS["profiler"]
        reasons.append(f"different profiler builds ({one.profiler} and {two.profiler})")
    return Comparability(score=max(score, 0), reasons=reasons, trace1=one, trace2=two)


def facts(model: TraceModel) -> TraceFacts:
    meta = model.trace.meta
    info = meta.distributed
    device = meta.devices[0].name if meta.devices and meta.devices[0].name else "unknown GPU"
    versions = ", ".join(f"{k} {v}" for k, v in sorted(meta.versions.items())) or "unrecorded"
    return TraceFacts(
        world_size=info.world_size if info is not None else None,
        rank=info.rank if info is not None else None,
        mode=_mode(model),
        precision=_precision(model),
        device=str(device),
        profiler=versions,
    )


def _job(f: TraceFacts) -> str:
    if f.world_size is None:
        return "a single process"
    article = "an" if str(f.world_size).startswith("8") or f.world_size in (11, 18) else "a"
    return f"{article} {f.world_size}-rank job" + (
        f" (rank {f.rank})" if f.rank is not None else ""
    )


def _mode(model: TraceModel) -> Mode:
    names = model.events["name"].astype(str)
    cat = model.events["cat"].astype(str)
    compiled = bool(names.isin(COMPILED_OPS).any()) or bool(
        names[cat.to_numpy() == "kernel"].str.startswith("triton_").any()
    )
    calls = names[cat.isin(LAUNCH_CATEGORIES).to_numpy()]
    graphs = bool(calls.isin(GRAPH_LAUNCHES).any())
    if compiled and graphs:
        return "compiled, graph replay"
    return "compiled" if compiled else "graph replay" if graphs else "eager"


def _precision(model: TraceModel) -> str:
    """The precision of the matrix kernels (GEMM, convolution, attention) holding the most
    GPU time."""
    gpu = model.gpu
    kernels = gpu[gpu["cat"] == "kernel"]
    time: Counter[str] = Counter()
    by_name = kernels.groupby(kernels["name"].astype(str), observed=True)["dur"].sum()
    for name, us in by_name.items():
        read = read_kernel(str(name))
        if read.matrix_work and read.precision != "unknown":
            time[read.precision] += float(us)
    return time.most_common(1)[0][0] if time else "unknown"


def _shape_changes(model1: TraceModel, model2: TraceModel) -> list[str]:
    """Trace 1's top operators (GPU time) whose most common input shapes differ in trace 2."""
    gpu = model1.gpu
    launcher = gpu["launcher"].to_numpy()
    named = launcher >= 0
    times = gpu.loc[named, "dur"].groupby(model1.names[launcher[named]]).sum().sort_values()[::-1]
    out = []
    for op in times.index[:TOP_OPERATORS]:
        one, two = _usual_shape(model1, str(op)), _usual_shape(model2, str(op))
        if one and two and one != two:
            out.append(f"{op}: {one} → {two}")
    return out


def _usual_shape(model: TraceModel, op: str) -> str | None:
    ev = model.events
    rows = np.flatnonzero((ev["name"] == op).to_numpy())
    dims = ev["input_dims"].astype(object).to_numpy()[rows]
    text = [d for d in dims if isinstance(d, str) and d not in ("[]", "")]
    return Counter(text).most_common(1)[0][0] if text else None
