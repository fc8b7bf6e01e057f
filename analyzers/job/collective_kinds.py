"""What a collective is and how large, where the trace's c10d fields do not say (older
PyTorch): the kind from the c10d operator that launched the kernel or from the NCCL/RCCL
kernel's own name, the size from the operator's recorded input
(docs/multirank.md#per-rank-collectives).

`ncclKernel_AllReduce_RING_LL_Sum_float` is an all-reduce; `ncclKernel_SendRecv_*` is the
point-to-point kernel NCCL runs an all-to-all with, so the operator (`c10d::alltoall_base_`)
is read first. The size is the element count of the operator's first input when it is one
tensor (`Input Dims` [[6144]], `Input type` ["float"]); a list of tensors records no shape.
"""

from __future__ import annotations

import json
import re

import numpy as np

# kernel name -> collective name, the first match wins (ReduceScatter before Reduce)
KERNEL_KINDS = (
    (re.compile(r"AllReduce|all_reduce", re.IGNORECASE), "allreduce"),
    (re.compile(r"ReduceScatter|reduce_scatter", re.IGNORECASE), "reduce_scatter"),
    (re.compile(r"AllGather|all_gather", re.IGNORECASE), "allgather"),
    (re.compile(r"AllToAll|all_to_all", re.IGNORECASE), "all_to_all"),
    (re.compile(r"Broadcast", re.IGNORECASE), "broadcast"),
    (re.compile(r"_Reduce_|Reduce_RING|Reduce_TREE", re.IGNORECASE), "reduce"),
    (re.compile(r"SendRecv", re.IGNORECASE), "send_recv"),
)
# c10d / nccl operator -> collective name
OPERATOR = re.compile(r"^(?:c10d::|nccl:|rccl:|gloo:)_?([a-z_]+?)_?(?:base_?)?_?$")
OPERATOR_KINDS = {
    "allreduce": "allreduce",
    "all_reduce": "allreduce",
    "allreduce_coalesced": "allreduce",
    "alltoall": "all_to_all",
    "all_to_all": "all_to_all",
    "alltoall_base": "all_to_all",
    "allgather": "allgather",
    "all_gather": "allgather",
    "allgather_into_tensor_coalesced": "allgather",
    "reduce_scatter": "reduce_scatter",
    "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "send": "send",
    "recv": "recv",
    "barrier": "barrier",
}
DTYPES = {  # Input type spellings -> c10d's ScalarType names (job/bandwidth.py reads those)
    "float": "Float",
    "double": "Double",
    "c10::half": "Half",
    "c10::bfloat16": "BFloat16",
    "int": "Int",
    "long int": "Long",
    "signed char": "Char",
    "unsigned char": "Byte",
}


def kind_of_kernel(kernel: str) -> str:
    """The collective an NCCL/RCCL kernel runs, "" when its name does not say."""
    return next((kind for pattern, kind in KERNEL_KINDS if pattern.search(kernel)), "")


def kind_of_operator(name: str) -> str:
    """The collective a c10d (or `nccl:`) operator names, "" for any other operator."""
    found = OPERATOR.match(name)
    if found is None:
        return ""
    key = found.group(1).strip("_")
    return OPERATOR_KINDS.get(key, OPERATOR_KINDS.get(key.removesuffix("_base"), ""))


def size_of_input(dims_json: object, types_json: object) -> tuple[int, str]:
    """(element count, c10d dtype) of an operator's first input when it is one tensor, else
    (-1, "") (also when either field is absent: not JSON text)."""
    if not isinstance(dims_json, str) or not isinstance(types_json, str):
        return -1, ""
    try:
        dims = json.loads(dims_json) if dims_json else None
        types = json.loads(types_json) if types_json else None
    except ValueError:
        return -1, ""
    if not isinstance(dims, list) or not dims or not isinstance(types, list) or not types:
        return -1, ""
    first, kind = dims[0], types[0]
    if not isinstance(first, list) or not first or not isinstance(kind, str):
        return -1, ""
    if not all(isinstance(d, int) and d >= 0 for d in first):
        return -1, ""
    dtype = DTYPES.get(kind.lower())
    if dtype is None:
        return -1, ""
    return int(np.prod(first, dtype=np.int64)), dtype
