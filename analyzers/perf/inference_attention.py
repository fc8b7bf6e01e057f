"""Attention over paged KV caches in serving engines (vLLM, SGLang/aiter) and its cache writes.

These ops see a whole iteration's batch flattened into T query rows, so their shapes alone do
not say how the rows split into requests, nor how much cached context each request reads.
The per-request statistics come from the iteration annotation that encloses the op
(docs/report-tables.md#op-context, `OpArgs.annotation`):
`execute_<T>_context_<n>(sq<a>sk<b>sqsq<c>sqsk<d>)_generation_<m>(sq..sk..sqsq..sqsk..)`, where
per phase sq = Σ query lengths, sk = Σ key lengths (cached + new), sqsq = Σ sq², sqsk = Σ sq·sk.
Without such an annotation the instance has no model (`Unsupported`), never a guess.
Older vLLM writes `execute_context_<n>(<Σsq>_<Σsq²>)_generation_<m>(<Σsq>)`, with no key
lengths. A prefill-only iteration in that format (m = 0) is read with every request's keys
being its new tokens (sk_i = sq_i, so Σsk = Σsq and Σsq·sk = Σsq²): exact for a prompt with
no cached prefix, a lower bound on work otherwise, and said in the row's params. An
iteration with decode requests in that format gives no model (their cached lengths are
unknown).

Attention work, for request i with sq_i new tokens and sk_i keys (causal, the new tokens are
the last sq_i of the sk_i): query j (0-based) sees sk_i − sq_i + j + 1 keys, so the
query-key pairs are P = Σ_i (sq_i·sk_i − sq_i·(sq_i − 1)/2) = sqsk − (sqsq − sq)/2, summed
over the phases the op ran. FLOPs = 2·H_q·P·d_qk (QKᵀ) + 2·H_q·P·d_v (PV); softmax is not
counted (as for SDPA). Non-causal: P = sqsk. TraceLens's InferenceAttention counts context
pairs as sqsk − sqsq/2 (no diagonal) and generation pairs as sqsk (no causal mask among
several speculative tokens); the exact count differs by H_q·(d_qk + d_v)·sq_context FLOPs
(docs/deviations.md#inference-attention-reads-its-iteration-annotation-and-counts-causal-pairs-exactly).
Bytes (the compulsory traffic): Q read and O written for the query rows the annotation
describes (Σsq), K and V read once per key (Σsk rows of H_kv heads), at the element sizes of
q, the output and the key tensor the op receives.

The piecewise-CUDA-graph capture of vLLM runs attention with no metadata: the backend then
only zero-fills its output (one `FillFunctor` kernel). Such an instance (`OpArgs.kernels` all
fills) is scored as what it did, a write of the output, with `dummy_run` in its params.

`reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype,
k_scale, v_scale)` copies T new keys and values into their cache slots: bytes = key and value
read + int64 slot per token + the same elements written at the cache's element size; FLOPs =
elements written (the copy convention of elementwise.py), so it scores on the memory roof.
Padding tokens (slot −1, skipped by the kernel) cannot be told apart in the shapes and count.
SGLang's `sglang::store_cache(k, v, k_cache, v_cache, indices, ...)` ([T, H_kv·d] rows) is
costed the same way.

SGLang's aiter decode (`sglang_profiler::attention_paged_attention_ragged`, the profiler's
wrapper around aiter's `paged_attention_ragged`) uses the same formulas as vLLM's op, with
the phase matched by query rows and batch (len(kv_indptr) − 1). Its paged caches are
[pages, page, H_kv, d] (NHD) or [pages, H_kv, page, d] (HND); the layout argument is not
recorded, so the page size is read from the ll4mi kernel's template arguments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .base import OpArgs, PerfModel, Unsupported, Work, numel
from .dtypes import precision
from .elementwise import parse_flag, parse_ints, size_of, total_bytes

SLOT_BYTES = 8  # int64 slot_mapping entries
FILL_KERNEL = "FillFunctor"

_PHASE = r"\(sq(\d+)sk(\d+)sqsq(\d+)sqsk(\d+)\)"
VLLM_ITERATION = re.compile(rf"execute_(\d+)_context_(\d+){_PHASE}_generation_(\d+){_PHASE}")
OLD_VLLM_ITERATION = re.compile(r"execute_context_(\d+)\((\d+)_(\d+)\)_generation_(\d+)\((\d+)\)")
NO_PREFIX = "keys = new tokens (annotation without key lengths; a cached prefix adds keys)"


@dataclass(frozen=True, slots=True)
class Phase:
    """Aggregates over the requests of one phase (context = prefill, generation = decode)."""

    requests: int
    sq: int
    sk: int
    sqsq: int
    sqsk: int

    def __add__(self, other: Phase) -> Phase:
        return Phase(
            self.requests + other.requests,
            self.sq + other.sq,
            self.sk + other.sk,
            self.sqsq + other.sqsq,
            self.sqsk + other.sqsk,
        )

    def pairs(self, causal: bool) -> float:
        """Query-key pairs the kernel scores: sqsk, less the masked part when causal."""
        return self.sqsk - (self.sqsq - self.sq) / 2 if causal else float(self.sqsk)


@dataclass(frozen=True, slots=True)
class Iteration:
    """One scheduler iteration's request statistics, parsed from its annotation."""

    tokens: int
    context: Phase
    generation: Phase
    assumption: str = ""  # what was assumed where the annotation is silent


def parse_iteration(annotation: str) -> Iteration | None:
    """The vLLM-style iteration statistics in an annotation; None when it carries none."""
    match = VLLM_ITERATION.search(annotation)
    if match is not None:
        v = [int(g) for g in match.groups()]
        return Iteration(tokens=v[0], context=Phase(*v[1:6]), generation=Phase(*v[6:11]))
    old = OLD_VLLM_ITERATION.search(annotation)
    if old is None:
        return None
    requests, sq, sqsq, decodes, decode_tokens = (int(g) for g in old.groups())
    if decodes or decode_tokens:
        return None  # decode requests' cached key lengths are not in this format
    context = Phase(requests, sq, sq, sqsq, sqsq)
    return Iteration(sq, context, Phase(0, 0, 0, 0, 0), assumption=NO_PREFIX)


def phases_for(iteration: Iteration, rows: int, requests: int | None = None) -> Phase:
    """The phase(s) whose query tokens fill the op's `rows` query rows.

    vLLM's unified attention runs both phases in one call, aiter's batch prefill only the
    context phase: the first of (both, context, generation) whose Σsq equals `rows` is
    taken; rows beyond both phases' tokens are CUDA-graph padding (no keys, no work).
    `requests`, when the op records its batch size, must match as well.
    """
    both = iteration.context + iteration.generation
    for phase in (both, iteration.context, iteration.generation):
        if phase.sq == rows and phase.sq > 0 and requests in (None, phase.requests):
            return phase
    if 0 < both.sq < rows and requests in (None, both.requests):
        return both
    raise Unsupported(
        f"annotation's query tokens (context {iteration.context.sq}, generation "
        f"{iteration.generation.sq}) do not match the op's {rows} query rows"
    )


@dataclass(frozen=True, slots=True)
class AttentionShape:
    """Heads, head sizes and element sizes of one call; the batch comes from `Phase`."""

    heads_q: int
    heads_kv: int
    d_qk: int
    d_v: int
    dtype_q: str
    dtype_kv: str
    dtype_out: str
    causal: bool = True


def attention_flops(s: AttentionShape, p: Phase) -> float:
    return 2.0 * s.heads_q * p.pairs(s.causal) * (s.d_qk + s.d_v)


def attention_bytes(s: AttentionShape, p: Phase) -> float | None:
    return total_bytes(
        (p.sq * s.heads_q * s.d_qk, size_of(s.dtype_q)),
        (p.sk * s.heads_kv * (s.d_qk + s.d_v), size_of(s.dtype_kv)),
        (p.sq * s.heads_q * s.d_v, size_of(s.dtype_out)),
    )


def _phase_work(
    s: AttentionShape, iteration: Iteration, rows: int, requests: int | None = None
) -> Work:
    """The work of the phase(s) that fill `rows`, with the query tokens each phase gave
    (`sum_ctx_tokens` prefill, `sum_gen_tokens` decode: the sdpa analysis's workload
    profile)."""
    p = phases_for(iteration, rows, requests)
    both = iteration.context + iteration.generation
    context, generation = iteration.context.sq, iteration.generation.sq
    if p != both:
        context, generation = (p.sq, 0) if p == iteration.context else (0, p.sq)
    tokens = {"sum_ctx_tokens": context, "sum_gen_tokens": generation}
    return _attention_work(s, p, tokens, iteration.assumption)


def _attention_work(
    s: AttentionShape, p: Phase, tokens: dict[str, int], assumption: str = ""
) -> Work:
    return Work(
        attention_flops(s, p),
        attention_bytes(s, p),
        precision(s.dtype_q),
        "matrix",
        {
            "requests": p.requests,
            "sum_sq": p.sq,
            "sum_sk": p.sk,
            "sum_sqsq": p.sqsq,
            "sum_sqsk": p.sqsk,
            **tokens,
            "H_Q": s.heads_q,
            "H_KV": s.heads_kv,
            "d_h_qk": s.d_qk,
            "d_h_v": s.d_v,
            "causal": s.causal,
            "dtype_q_kv_out": (s.dtype_q, s.dtype_kv, s.dtype_out),
        }
        | ({"assumption": assumption} if assumption else {}),
    )


def _heads(args: OpArgs, i: int) -> tuple[int, int, int]:
    """(rows, heads, head size) of a [T, H, d] input."""
    shape = args.shape(i)
    if len(shape) != 3:
        raise Unsupported(f"{args.name}: input {i} is {shape}, not [tokens, heads, head_dim]")
    return shape


def _zero_fill(args: OpArgs, out: int) -> Work:
    """A dummy-run instance: the output written with zeros, nothing else."""
    n, dtype = numel(args.shape(out)), args.dtype(out)
    return Work(
        n,
        total_bytes((n, size_of(dtype))),
        precision(dtype),
        "vector",
        {"dummy_run": "output zero-filled (no attention metadata)", "op_shape": args.shape(out)},
    )


def _iteration(args: OpArgs) -> Iteration:
    iteration = parse_iteration(args.annotation)
    if iteration is None:
        found = args.annotation or "none"
        raise Unsupported(f"{args.name}: no iteration statistics in the annotation ({found})")
    return iteration


def unified_attention(args: OpArgs) -> Work:
    """`vllm::unified_attention_with_output(query, key, value, output, layer_name, ...)`.

    q [T, H_q, d_qk], k [T, H_kv, d_qk], v [T, H_kv, d_v], output [T, H_q, d_v]; decoder
    self-attention, so causal. The KV cache is not among the inputs: cached keys and values
    are costed at the key tensor's element size, and a sliding window (not recorded) is not
    applied.
    """
    if args.kernels and all(FILL_KERNEL in k for k in args.kernels):
        return _zero_fill(args, 3)
    rows, heads_q, d_qk = _heads(args, 0)
    _, heads_kv, d_k = _heads(args, 1)
    _, _, d_v = _heads(args, 2)
    if d_k != d_qk:
        raise Unsupported(f"{args.name}: query head size {d_qk} != key head size {d_k}")
    shape = AttentionShape(
        heads_q, heads_kv, d_qk, d_v, args.dtype(0), args.dtype(1), args.dtype(3)
    )
    return _phase_work(shape, _iteration(args), rows)


def mha_batch_prefill(args: OpArgs) -> Work:
    """`aiter::mha_batch_prefill(q, k_cache, v_cache, cu_seqlens_q, kv_indptr,
    kv_page_indices, max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, logits_soft_cap,
    zero_tensors, is_causal, window_size_left, window_size_right, ...)`.

    q [T, H_q, d]; the caches [pages, (page_size,) H_kv, d]; batch = len(cu_seqlens_q) − 1.
    The output is not recorded: it has q's shape and dtype.
    """
    rows, heads_q, d_qk = _heads(args, 0)
    k_cache, v_cache = args.shape(1), args.shape(2)
    if len(k_cache) not in (3, 4) or k_cache[-1] != d_qk or len(v_cache) != len(k_cache):
        raise Unsupported(f"{args.name}: KV cache shapes {k_cache}, {v_cache}")
    causal = parse_flag(args.value(12))
    if causal is None:
        raise Unsupported(f"{args.name}: is_causal '{args.value(12)}'")
    window = parse_ints(args.value(13))
    if window and window[0] >= 0:
        raise Unsupported(f"{args.name}: sliding window {window[0]} is not modelled")
    cu_seqlens = args.shape(3)
    requests = cu_seqlens[0] - 1 if len(cu_seqlens) == 1 else None
    shape = AttentionShape(
        heads_q,
        k_cache[-2],
        d_qk,
        v_cache[-1],
        args.dtype(0),
        args.dtype(1),
        args.dtype(0),
        causal=causal,
    )
    return _phase_work(shape, _iteration(args), rows, requests)


def reshape_and_cache_flash(args: OpArgs) -> Work:
    """Keys and values [T, H_kv, d] copied into their slots of the paged caches."""
    key, value, slots = args.shape(0), args.shape(1), args.shape(4)
    tokens = key[0] if key else 0
    if len(key) != 3 or len(value) != 3 or numel(slots) != tokens:
        raise Unsupported(f"{args.name}: key {key}, value {value}, slot_mapping {slots}")
    return _cache_write(args, key, value, tokens, float(SLOT_BYTES))


def _cache_write(
    args: OpArgs,
    key: tuple[int, ...],
    value: tuple[int, ...],
    tokens: int,
    index_bytes: float | None,
) -> Work:
    """k (input 0) and v (input 1) read with one index per token, and written into the
    caches (inputs 2, 3) at the caches' element sizes; FLOPs = elements written."""
    n_k, n_v = numel(key), numel(value)
    nbytes = total_bytes(
        (n_k, size_of(args.dtype(0))),
        (n_v, size_of(args.dtype(1))),
        (tokens, index_bytes),
        (n_k, size_of(args.dtype(2))),
        (n_v, size_of(args.dtype(3))),
    )
    params = {
        "num_tokens": tokens,
        "shape_key": key,
        "shape_value": value,
        "dtype_kv_cache": (args.dtype(0), args.dtype(2)),
    }
    return Work(n_k + n_v, nbytes, precision(args.dtype(0)), "vector", params)


# `paged_attention_ll4mi_QKV_mfma16_kernel<..., (vllm::Fp8KVCacheDataType)0, BLOCK_SIZE,
# HEAD_SIZE, ...>`: the page size and head size the kernel was compiled for
_PA_TEMPLATE = re.compile(r"Fp8KVCacheDataType\)\d+, (\d+), (\d+),")


def _cache_layout(args: OpArgs, cache: tuple[int, ...], d: int) -> tuple[int, int]:
    """(H_kv, page size) of a 4-d paged cache, NHD [pages, page, H_kv, d] or HND [pages,
    H_kv, page, d]: the layout argument is not recorded, so the page size comes from the
    ll4mi kernel's template; when both dims are equal the two layouts read the same."""
    if len(cache) != 4 or cache[-1] != d:
        raise Unsupported(f"{args.name}: KV cache {cache} is not [pages, ., ., {d}]")
    if cache[1] == cache[2]:
        return cache[2], cache[1]
    for kernel in args.kernels:
        match = _PA_TEMPLATE.search(kernel)
        if match and int(match.group(2)) == d:
            page = int(match.group(1))
            if page == cache[1]:
                return cache[2], page
            if page == cache[2]:
                return cache[1], page
    raise Unsupported(f"{args.name}: KV cache {cache}: NHD or HND layout not recorded")


def paged_attention_ragged(args: OpArgs) -> Work:
    """aiter's `paged_attention_ragged` as SGLang's profiler records it (tensors only):
    (out, workspace, query, key_cache, value_cache, kv_indptr, kv_page_indices,
    kv_last_page_lens, alibi_slopes, k_scale, v_scale, fp8_out_scale).

    out and query [T, H_q, d]; batch = len(kv_indptr) − 1; decode, so causal (one query
    token per request sees every cached key; the diagonal term vanishes for sq = 1).
    """
    rows, heads_q, d = _heads(args, 2)
    if args.shape(0) != args.shape(2):
        raise Unsupported(f"{args.name}: out {args.shape(0)} differs from query {args.shape(2)}")
    heads_kv, _ = _cache_layout(args, args.shape(3), d)
    if args.shape(4) != args.shape(3) or heads_kv <= 0 or heads_q % heads_kv:
        raise Unsupported(f"{args.name}: KV caches {args.shape(3)}, {args.shape(4)}")
    indptr = args.shape(5)
    requests = indptr[0] - 1 if len(indptr) == 1 else None
    shape = AttentionShape(heads_q, heads_kv, d, d, args.dtype(2), args.dtype(3), args.dtype(0))
    return _phase_work(shape, _iteration(args), rows, requests)


def store_cache(args: OpArgs) -> Work:
    """`sglang::store_cache(k, v, k_cache, v_cache, indices, row_bytes, ...)`: k and v
    [T, H_kv·d] copied into rows `indices` [T] (int64) of the caches [slots, H_kv·d].
    The `reshape_and_cache_flash` formula: k, v and the indices read, k and v written."""
    key, value, indices = args.shape(0), args.shape(1), args.shape(4)
    tokens = key[0] if key else 0
    caches = (args.shape(2), args.shape(3))
    if (
        len(key) != 2
        or value != key
        or numel(indices) != tokens
        or any(len(c) != 2 or c[1] != key[1] for c in caches)
    ):
        raise Unsupported(f"{args.name}: k {key}, v {value}, caches {caches}, indices {indices}")
    return _cache_write(args, key, value, tokens, size_of(args.dtype(4)))


SGLANG_PAGED_ATTENTION = "sglang_profiler::attention_paged_attention_ragged"

MODELS: dict[str, PerfModel] = {
    "vllm::unified_attention_with_output": PerfModel(unified_attention),
    "aiter::mha_batch_prefill": PerfModel(mha_batch_prefill),
    "_C_cache_ops::reshape_and_cache_flash": PerfModel(reshape_and_cache_flash),
    SGLANG_PAGED_ATTENTION: PerfModel(paged_attention_ragged),
    "sglang::store_cache": PerfModel(store_cache),
}
# the ops whose model reads the enclosing iteration annotation / the instance's kernel names
NEEDS_ANNOTATION = frozenset(
    {"vllm::unified_attention_with_output", "aiter::mha_batch_prefill", SGLANG_PAGED_ATTENTION}
)
NEEDS_KERNELS = frozenset({"vllm::unified_attention_with_output", SGLANG_PAGED_ATTENTION})
