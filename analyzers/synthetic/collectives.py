"""Distributed training whose GPU idles while the host issues collectives.

* `write_ddp_broadcast_trace`: eager DDP broadcasts its buffers in every forward (flatten,
  NCCL broadcast, unflatten, copy back), 88 ms of host work with the GPU idle;
* `write_tiny_all_reduces_trace`: a compiled backward issues a tiny all-reduce per gradient
  from `CompiledFunctionBackward` and waits on each at once (80 a step, none overlapped).

Timing is exact; each plan's docstring works the planted answer out (planted.py
defines the terms).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .devices import H100, MI300X, Vendor
from .idle import (
    BACKWARD_FRAMES,
    START_US,
    TrainingPlan,
    launch_training,
)
from .kernels import (
    CAT_KERNEL,
    COPY_KERNEL,
    FUSED_ADAM,
    NCCL_ALL_REDUCE,
    NCCL_BROADCAST,
    collective,
    paced,
    seeded,
)
from .planted import ACTIONS, Planted, ms
from .writer import Writer


@dataclass(frozen=True)
class DdpBroadcastPlan:
    """Eager DDP (`broadcast_buffers=True`; the steps run under `no_sync()`, as with gradient
    accumulation, so only the buffers are communicated). Iteration k starts at t_k with
    `DistributedDataParallel.forward`, whose buffer sync walks `buckets` buckets from
    t_k + 3 µs, `bucket_us` each, bucket starting at u:

    * Python bucketing (`named_buffers`) for `names_us`;
    * `aten::flatten_dense_tensors` for `flatten_us`, whose `aten::cat` kernel (`cat_us`)
      starts 42 µs before it returns;
    * 2 µs later an event on the compute stream, that the NCCL stream waits on; at
      c = 8 µs after the flatten, `c10d::broadcast_` > `record_param_comms` (`issue_us`,
      from c + 2 µs) puts the broadcast (`broadcast_us`) on the NCCL stream at c + issue;
      `Work.wait()` makes the compute stream wait for it;
    * `aten::unflatten_dense_tensors` for `unflatten_us` from c + issue + 12 µs, then
      `copies` `aten::copy_`s of the buffers, 25 µs apart (`copy_us` kernels).

    After 2 µs the module's step (`train`, TrainingPlan) launches from t_k + `section_us`,
    still inside the annotation for its forward. The previous step's work ends
    `train.lag_us` into the iteration, then the GPU idles but for the buffer kernels until
    the step's copy starts 18 µs after the section: idle = section + 18 µs - lag_us -
    buckets x (cat + broadcast + copies): 87.445 ms a step, all of it under
    `DistributedDataParallel.forward` (collective_issue), 28.088 ms of it in flatten (each
    minus its cat) and unflatten (each minus the 188 µs of broadcast it overlaps)."""

    train: TrainingPlan
    steps: int = 5
    buckets: int = 4
    names_us: float = 14_750.0
    flatten_us: float = 3_000.0
    unflatten_us: float = 4_250.0
    cat_us: float = 40.0
    issue_us: float = 100.0
    broadcast_us: float = 200.0
    copies: int = 4
    copy_us: float = 5.0
    first_step: int = 1

    @property
    def bucket_us(self) -> float:
        tail = self.unflatten_us + 25.0 * self.copies
        return self.names_us + self.flatten_us + 8.0 + self.issue_us + 12.0 + tail

    @property
    def section_us(self) -> float:
        return 3.0 + self.buckets * self.bucket_us + 2.0

    @property
    def busy_us(self) -> float:
        return self.buckets * (self.cat_us + self.broadcast_us + self.copies * self.copy_us)

    def idle_us(self, k: int) -> float:
        if k == 0:  # the GPU window starts at the first cat
            first = 3.0 + self.names_us + self.flatten_us - 42.0
            return self.section_us + START_US - first - self.busy_us
        return self.section_us + START_US - self.train.lag_us - self.busy_us

    @property
    def flatten_unflatten_idle_us(self) -> float:
        """Per iteration: idle inside the flatten and unflatten operators."""
        overlap = self.broadcast_us - 12.0  # the broadcast runs into the unflatten
        return self.buckets * (self.flatten_us - self.cat_us + self.unflatten_us - overlap)


DDP_BROADCAST = DdpBroadcastPlan(TrainingPlan(copy_us=125.0, gemms=10, gemm_us=55.0, optimizer=3))
COMM_STREAM = 21
DDP_FRAMES = (
    "torch/nn/parallel/distributed.py(1470): _pre_forward",
    "torch/nn/parallel/distributed.py(2047): _sync_buffers",
    "torch/nn/parallel/distributed.py(2070): _sync_module_buffers",
    "torch/nn/parallel/distributed.py(2084): _default_broadcast_coalesced",
)


def _bucket(w: Writer, p: DdpBroadcastPlan, u: float) -> None:
    w.frame("torch/nn/modules/module.py(2283): named_buffers", u, u + p.names_us)
    a = u + p.names_us
    w.op("aten::flatten_dense_tensors", a, a + p.flatten_us)
    w.launching_op("aten::cat", CAT_KERNEL, a + p.flatten_us - 60.0, p.cat_us)
    c = a + p.flatten_us + 8.0
    done = w.record_event(c - 6.0, 7)
    w.wait_event(c - 3.0, COMM_STREAM, done)
    w.op("c10d::broadcast_", c, c + p.issue_us + 4.0)
    cast = collective(
        w,
        c + 2.0,
        kernel=NCCL_BROADCAST,
        collective_name="broadcast",
        annotation="nccl:broadcast",
        numel=1_048_576,
        dur=p.broadcast_us,
        issue_us=p.issue_us,
        stream=COMM_STREAM,
        group_size=2,
    )
    w.wait_event(c + p.issue_us + 6.0, 7, cast.end)
    v = c + p.issue_us + 12.0
    w.op("aten::unflatten_dense_tensors", v, v + p.unflatten_us)
    copy = [("aten::copy_", COPY_KERNEL, p.copy_us)] * p.copies
    paced(w, v + p.unflatten_us, copy, 25.0)


def write_ddp_broadcast_trace(
    path: Path, *, seed: int = 0, vendor: Vendor = "nvidia", plan: DdpBroadcastPlan = DDP_BROADCAST
) -> Path:
    """DDP broadcasting its buffers every forward (DDP_BROADCAST)."""
    _, pid, t = seeded(seed)
    w = Writer(
        device=MI300X if vendor == "amd" else H100, host_pid=pid, main_tid=pid, vendor=vendor
    )
    bwd, first = w.thread(pid + 17, "pt_autograd_0"), t
    p, fwd_ops = plan, plan.train.op_us * (1 + plan.train.gemms // 2 * (1 + plan.train.per_gemm))
    for k in range(p.steps):
        section = t + p.section_us
        w.annotation("DistributedDataParallel.forward", t, section + fwd_ops)
        w.frame("torch/nn/parallel/distributed.py(1636): forward", t, section + fwd_ops)
        for depth, name in enumerate(DDP_FRAMES):
            w.frame(name, t + 0.5 * (depth + 1), section - 0.5 * (depth + 1))
        for b in range(p.buckets):
            _bucket(w, p, t + 3.0 + b * p.bucket_us)
        end = launch_training(w, p.train, section, bwd, vendor)
        w.step(p.first_step + k, t, end)
        w.frame("train.py(66): train_step", t, end)
        t = end
    w.frame("train.py(120): main", first - 2.0, t + 2.0)
    world = {"backend": "nccl", "rank": 0, "world_size": 2, "pg_count": 1}
    return w.write(path, "ddp_buffer_broadcast", distributedInfo=world)


def ddp_planted(plan: DdpBroadcastPlan = DDP_BROADCAST) -> Planted:
    idle = plan.steps and sum(plan.idle_us(k) for k in range(plan.steps)) / 1e3
    step = (plan.section_us + plan.train.host_us) / 1e3
    return Planted(
        p1="idle",
        cause="collective_issue",
        call_site="aten::unflatten_dense_tensors",
        caller="DistributedDataParallel.forward",
        action=ACTIONS["collective_issue"],
        idle_by_cause_ms=ms({"collective_issue": idle}),
        steady_iterations=tuple(range(plan.steps)),
        step_ms=(round(step, 6),) * plan.steps,
        estimate_ms=(round(idle, 6),) * 2,
        notes=f"DDP broadcasts its buffers every forward: {plan.idle_us(1) / 1e3:g} ms of GPU "
        f"idle a step, {plan.flatten_unflatten_idle_us / 1e3:g} ms of it in "
        "flatten/unflatten_dense_tensors; broadcast_buffers=False removes it.",
    )


TRITON = "triton_poi_fused__to_copy_add_mul_native_layer_norm_backward_{}"
ALL_REDUCE_FRAMES = ("torch/_inductor/output_code.py(580): __call__",)


@dataclass(frozen=True)
class TinyAllReducePlan:
    """A compiled model whose backward all-reduces every gradient on its own. Iteration k
    starts at t_k with `CompiledFunction`: `forward` Triton kernels of `op_us`, launched
    `op_us` apart (the GPU keeps pace, so it drains 18 µs after the last launch). The
    autograd thread then runs `CompiledFunctionBackward`: `units` times, from u, a Triton
    kernel (`compute_us`, launched at u + 8 µs, on the GPU at u + 18 µs), then
    `_c10d_functional::all_reduce_` from u + 25 µs, whose `record_param_comms` (from
    u + 30 µs, `issue_us`) puts a `all_reduce_us` all-reduce on the NCCL stream at u + 228 µs
    and returns at u + 235 µs, then `_c10d_functional::wait_tensor` (u + 235 to u + 245 µs)
    makes the compute stream wait for it, and the next unit starts at u + `unit_us`. Then
    `Optimizer.step#AdamW.step` (`adam_us`, one fused kernel 18 µs in) ends the iteration.

    Every unit idles the GPU from its kernel's end to the all-reduce (190 µs) and from the
    all-reduce's end to the wait's return (5 µs): collective_issue 195 µs; then 18 µs before
    the next unit's kernel (dispatch, in CompiledFunctionBackward), or before the fused
    AdamW (optimizer_step) after the last. Nothing overlaps the all-reduces."""

    steps: int = 3
    units: int = 80
    forward: int = 60
    compute_us: float = 20.0
    issue_us: float = 200.0
    all_reduce_us: float = 12.0
    numel: int = 16_384
    op_us: float = 25.0
    first_step: int = 7

    @property
    def unit_us(self) -> float:
        return self.issue_us + 45.0

    def idle_us(self) -> dict[str, float]:
        """Per iteration."""
        return {
            "collective_issue": self.units * (self.issue_us - 10.0 + 5.0),
            "dispatch": (self.units - 1) * START_US,
            "optimizer_step": START_US,
        }

    @property
    def step_us(self) -> float:
        return self.op_us * (self.forward + 1) + self.units * self.unit_us


TINY_ALL_REDUCES = TinyAllReducePlan()


def _unit(w: Writer, p: TinyAllReducePlan, u: float, i: int, bwd: int) -> float:
    w.launch(TRITON.format(i % 7), u + 8.0, p.compute_us, tid=bwd, api="cuLaunchKernel")
    w.op("_c10d_functional::all_reduce_", u + 25.0, u + 235.0, bwd)
    got = collective(
        w,
        u + 30.0,
        kernel=NCCL_ALL_REDUCE,
        collective_name="allreduce",
        annotation="nccl:all_reduce",
        numel=p.numel,
        dur=p.all_reduce_us,
        issue_us=p.issue_us,
        stream=COMM_STREAM,
        tid=bwd,
    )
    w.op("_c10d_functional::wait_tensor", u + 235.0, u + 245.0, bwd)
    w.wait_event(u + 237.0, 7, got.end, bwd)
    return u + p.unit_us


def write_tiny_all_reduces_trace(
    path: Path, *, seed: int = 0, plan: TinyAllReducePlan = TINY_ALL_REDUCES
) -> Path:
    """Hundreds of tiny all-reduces from a compiled backward (TINY_ALL_REDUCES), on H100."""
    _, pid, t = seeded(seed)
    w, p = Writer(device=H100, host_pid=pid, main_tid=pid), plan
    bwd, first = w.thread(pid + 17, "pt_autograd_0"), t
    for k in range(p.steps):
        f_end = t + p.forward * p.op_us
        w.op("CompiledFunction", t, f_end)
        for i in range(p.forward):
            w.launch(TRITON.format(i % 5), t + i * p.op_us + 8.0, p.op_us, api="cuLaunchKernel")
        b_end = f_end + p.units * p.unit_us
        w.op("autograd::engine::evaluate_function: CompiledFunctionBackward", f_end, b_end, bwd)
        w.op("CompiledFunctionBackward", f_end, b_end, bwd)
        u = f_end
        for i in range(p.units):
            u = _unit(w, p, u, i, bwd)
        for depth, name in enumerate(BACKWARD_FRAMES):
            w.frame(name, f_end + depth * 0.2, b_end - depth * 0.2)
        w.annotation("Optimizer.step#AdamW.step", b_end, b_end + p.op_us)
        w.launching_op("aten::_fused_adamw_", FUSED_ADAM, b_end, p.op_us)
        end = b_end + p.op_us
        w.step(p.first_step + k, t, end)
        w.frame("train.py(77): train_step", t, end)
        t = end
    w.frame("train.py(130): main", first - 2.0, t + 2.0)
    world = {"backend": "nccl", "rank": 0, "world_size": 8, "pg_count": 1}
    return w.write(path, "compiled_tiny_all_reduces", distributedInfo=world)


def tiny_all_reduces_planted(plan: TinyAllReducePlan = TINY_ALL_REDUCES) -> Planted:
    idle = {c: plan.steps * us / 1e3 for c, us in plan.idle_us().items()}
    return Planted(
        p1="idle",
        cause="collective_issue",
        call_site="record_param_comms",
        caller="CompiledFunctionBackward",
        action=ACTIONS["collective_issue"],
        idle_by_cause_ms=ms(idle),
        steady_iterations=tuple(range(plan.steps)),
        step_ms=(round(plan.step_us / 1e3, 6),) * plan.steps,
        estimate_ms=(round(idle["collective_issue"], 6),) * 2,
        notes=f"{plan.units} all-reduces of {plan.numel} floats per step, issued one by one "
        "from CompiledFunctionBackward and waited on at once: 0 % overlapped with compute; "
        "bucket the gradients (fewer, larger all-reduces) and overlap them.",
    )
