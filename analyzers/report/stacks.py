"""`call_stack_full` and `entry_point` of an op instance (docs/trace.md#stacks).

The call stack keeps the frames a reader cares about (nn.Module frames, Python source frames,
operators) from the root down to the op, then each kernel's path below it. The entry point
is the user's source line: a deeper frame named after the op, else the nearest enclosing
source frame that is not framework plumbing.
"""

from __future__ import annotations

import re
from typing import Any

from ..trace.tree import ancestors

NOT_FOUND = "Not found"
_MODULE_COUNTER = re.compile(r"^(nn\.Module: .*?)_\d+$")
_WRAPPER_PREFIXES = ("<built-in", "pybind11_builtins", "nn.Module:")
_WRAPPER_PATHS = (
    "torch/_ops.py",
    "torch/nn/modules/module.py",
    "torch/utils/_contextlib.py",
    "torch/utils/_device.py",
    "torch/_tensor.py",
    "torch/functional.py",
    "torch/overrides.py",
    "torch/_inductor/",
    "torch/_functorch/",
    "torch/distributed/c10d_logger.py",
    "triton/backends/",
)
_WRAPPER_FUNCTIONS = frozenset(
    {
        "__torch_function__",
        "_call_impl",
        "_wrapped_call_impl",
        "decorate_context",
        "dispatch_wrapper",
        "handle_torch_function",
        "wrapper",
        "custom_wrapper",
        "wrapper_custom",
        "outer_wrapper",
    }
)


def _kept(name: str, is_cpu_op: bool) -> bool:
    return is_cpu_op or "nn.Module" in name or "::" in name or "/" in name


def _clean(name: str) -> str:
    """`nn.Module: Qwen2Model_0` -> `nn.Module: Qwen2Model`; other frames unchanged."""
    match = _MODULE_COUNTER.match(name)
    return match.group(1) if match else name


def call_stack_full(
    parent: Any, names: Any, is_cpu_op: Any, op_uid: int, kernel_uids: list[int]
) -> list[Any]:
    """Frames from the root to the op, then each distinct kernel path as a sub-list."""
    chain = [op_uid, *ancestors(parent, op_uid)][::-1]
    prefix = [_clean(names[n]) for n in chain if _kept(names[n], is_cpu_op[n])]
    tails: list[list[str]] = []
    for kernel in kernel_uids:
        above = ancestors(parent, kernel)
        path = above[: above.index(op_uid)] if op_uid in above else above[:1]
        tail = [_clean(names[n]) for n in reversed(path) if _kept(names[n], is_cpu_op[n])]
        tail.append(names[kernel])
        if tail not in tails:
            tails.append(tail)
    if len(tails) == 1:
        return prefix + tails[0]
    return prefix + tails


def _function(frame: str) -> str:
    return frame.rpartition("): ")[2]


def _is_wrapper(frame: str) -> bool:
    return (
        frame.startswith(_WRAPPER_PREFIXES)
        or any(p in frame for p in _WRAPPER_PATHS)
        or _function(frame) in _WRAPPER_FUNCTIONS
    )


def entry_point(stack: list[Any], op_name: str) -> str:
    """The source frame where the op is called, or "Not found"."""
    flat = [f for f in stack if isinstance(f, str)]
    if op_name not in flat:
        return NOT_FOUND
    at = flat.index(op_name)
    local = op_name.rpartition("::")[2].lower()
    for frame in flat[at + 1 :]:
        if ".py" in frame and local and local in _function(frame).lower():
            return frame
    for frame in reversed(flat[:at]):
        if ".py" in frame and not _is_wrapper(frame):
            return frame
    return NOT_FOUND
