"""Model identification data for a run: condensed op info, nn.Module names, and a best guess.

From the perf report's unified table: the condensed op info (name, Input type, Input Dims),
the sorted unique ``nn.Module`` class names of ``call_stack_full``, and a deterministic guess
of family, architecture, scale and precision with its evidence. What a model submits wins
over the inferred values (`merged_identity`).
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any, Literal, NamedTuple

import pandas as pd
from pydantic import BaseModel, Field, model_validator

from ...markdown_text import plain_line
from ...report.cells import structured
from ...report.write_csv import for_output

UNKNOWN = "Cannot be inferred from trace"
INFERRED_SOURCE = "trace_inference"
CONDENSED_COLUMNS = ("name", "Input type", "Input Dims")
READ_COLUMNS = (*CONDENSED_COLUMNS, "call_stack_full", "operation_count")
_MODULE_RE = re.compile(r"nn\.Module:\s*([^\s',\]]+)")
_GEMM_OPS = {"aten::mm", "aten::addmm", "aten::linear", "aten::matmul", "aten::bmm"}
_EMBED_OPS = {"aten::embedding", "aten::index_select"}
_LAYER_RE = re.compile(r"(Decoder|Encoder)?Layer$|Block$")
_DTYPES = {
    "c10::bfloat16": "bf16",
    "c10::half": "fp16",
    "float": "fp32",
    "double": "fp64",
    "signed char": "int8",
}
_LM = "decoder-only transformer (causal LM)"
# (class-name prefix, family, architecture) — first case-insensitive prefix match per name counts.
_FAMILIES = (
    ("Qwen3Moe", "Qwen3-MoE", "decoder-only mixture-of-experts transformer"),
    ("Qwen3", "Qwen3", _LM),
    ("Qwen2Moe", "Qwen2-MoE", "decoder-only mixture-of-experts transformer"),
    ("Qwen2", "Qwen2", _LM),
    ("Llama", "Llama", _LM),
    ("Mixtral", "Mixtral", "decoder-only mixture-of-experts transformer"),
    ("Mistral", "Mistral", _LM),
    ("Gemma", "Gemma", _LM),
    ("Phi", "Phi", _LM),
    ("DeepseekV", "DeepSeek", "decoder-only mixture-of-experts transformer"),
    ("GPTNeoX", "GPT-NeoX", _LM),
    ("GPT2", "GPT-2", _LM),
    ("Falcon", "Falcon", _LM),
    ("Bert", "BERT", "encoder-only transformer"),
    ("Roberta", "RoBERTa", "encoder-only transformer"),
    ("Owlv2", "OWLv2", "vision-language detection transformer (CLIP-style encoders)"),
    ("CLIP", "CLIP", "dual-encoder vision-language transformer"),
    ("Vit", "ViT", "vision transformer encoder"),
    ("TimeSformer", "TimeSformer", "video transformer (divided space-time attention)"),
    ("ResNet", "ResNet", "convolutional neural network"),
    ("Bottleneck", "ResNet", "convolutional neural network"),
    ("BasicBlock", "ResNet", "convolutional neural network"),
    ("FluxTransformer", "Flux", "diffusion transformer (MMDiT)"),
    ("FluxSingleTransformer", "Flux", "diffusion transformer (MMDiT)"),
    ("SD3Transformer", "Stable Diffusion 3", "diffusion transformer (MMDiT)"),
    ("JointTransformerBlock", "Stable Diffusion 3", "diffusion transformer (MMDiT)"),
    ("UNet2DCondition", "Stable Diffusion (UNet)", "latent diffusion UNet"),
    ("T5", "T5", "encoder-decoder transformer"),
    ("Whisper", "Whisper", "encoder-decoder speech transformer"),
)


class ModelIdentification(BaseModel):
    model: str = UNKNOWN
    architecture: str = UNKNOWN
    scale: str = UNKNOWN
    precision: str = UNKNOWN
    evidence: list[str] = Field(default_factory=list)
    confidence: Literal["high", "medium", "low"] = "low"
    hidden_size: int | None = None
    num_layers: int | None = None
    vocab_size: int | None = None
    source: str = INFERRED_SOURCE

    @model_validator(mode="before")
    @classmethod
    def _null_means_not_given(cls, data: Any) -> Any:
        """A submitted `"model": null` says "I don't know": the field keeps the inference
        instead of the whole submission being refused."""
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if value is not None}
        return data


def _parse(cell: str | None) -> list:
    value = structured(cell)
    return value if isinstance(value, list) else []


def _size(value: object) -> int | None:
    """A tensor dimension, or None: traces can hold text, floats or junk where shapes belong,
    and such a shape is unknown rather than a vote."""
    return value if type(value) is int and value > 0 else None


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def op_rows(unified: pd.DataFrame | None) -> list[dict[str, str]] | None:
    """The unified table's rows as text, as its CSV holds them (structured cells as JSON);
    None when the run has no such table or it lacks the columns read here."""
    if unified is None or not {*READ_COLUMNS} <= set(unified.columns):
        return None
    text = for_output(unified[list(READ_COLUMNS)])
    text = text.astype(object).where(text.notna(), "")
    return [{c: str(v) for c, v in row.items()} for row in text.to_dict("records")]


class OpRow(NamedTuple):
    """One row of `op_rows` as identification reads it, its cells parsed once."""

    name: str
    input_types: list
    input_dims: list
    frames: list[str]  # the call stack
    count: int  # operation_count, at least 1

    @classmethod
    def of(cls, row: dict[str, str]) -> OpRow:
        """`row` as `op_rows` gives it: every one of READ_COLUMNS, as text."""
        return cls(
            row["name"],
            _parse(row["Input type"]),
            _parse(row["Input Dims"]),
            _strings(_parse(row["call_stack_full"])),
            _count(row["operation_count"]),
        )


def module_names(rows: list[dict[str, str]]) -> list[str]:
    """Sorted unique nn.Module class names; numeric instance suffixes (``_3``) are kept. A
    name holds no whitespace (the pattern stops there) and its control and format characters
    are escaped (`plain_line`), so each is one visible line of `nn_modules.txt`."""
    return _module_names(_strings(_parse(row["call_stack_full"])) for row in rows)


def _module_names(stacks: Iterable[list[str]]) -> list[str]:
    found: set[str] = set()
    for frames in stacks:
        for frame in frames:
            found.update(plain_line(name, None) for name in _MODULE_RE.findall(frame))
    return sorted(found)


def _count(cell: str) -> int:
    try:
        return max(1, int(float(cell or 1)))
    except (ValueError, OverflowError):  # text, NaN or inf in a hand-edited summary
        return 1


def _guess_family(modules: list[str]) -> tuple[str, str, str] | None:
    votes: Counter[tuple[str, str]] = Counter()
    for name in modules:
        for prefix, family, arch in _FAMILIES:
            if name.lower().startswith(prefix.lower()):
                votes[(family, arch)] += 1
                break
    if not votes:
        return None
    (family, arch), n = votes.most_common(1)[0]
    return family, arch, f"{n} nn.Module class name(s) match the {family} family"


def _shape_facts(rows: list[OpRow]) -> tuple[Counter, Counter, int | None]:
    """(last-dim votes of half-precision GEMM inputs, GEMM input dtypes, embedding vocab)."""
    hidden: Counter[int] = Counter()
    dtypes: Counter[str] = Counter()
    vocab: int | None = None
    for row in rows:
        name, weight, dims, types = row.name, row.count, row.input_dims, row.input_types
        if name in _GEMM_OPS:
            for dim, dtype in zip(dims, types, strict=False):
                if not (isinstance(dim, list) and dim and isinstance(dtype, str)):
                    continue
                label = _DTYPES.get(dtype.lower(), "fp8" if "float8" in dtype.lower() else dtype)
                dtypes[label] += weight
                if label in ("bf16", "fp16") and len(dim) in (2, 3) and _size(dim[-1]):
                    hidden[dim[-1]] += weight
        elif name in _EMBED_OPS and dims and isinstance(dims[0], list) and len(dims[0]) == 2:
            table_rows = _size(dims[0][0])
            if table_rows:
                vocab = max(vocab or 0, table_rows)
    return hidden, dtypes, vocab


def _layer_count(modules: list[str], rows: list[OpRow]) -> tuple[int | None, str]:
    indexed: dict[str, set[str]] = {}
    for name in modules:
        base, _, idx = name.rpartition("_")
        if base and idx.isdigit() and _LAYER_RE.search(base):
            indexed.setdefault(base, set()).add(idx)
    if indexed:
        base, idxs = max(indexed.items(), key=lambda kv: (len(kv[1]), kv[0]))
        return len(idxs), f"{len(idxs)} distinct {base}_<n> instances in call stacks"
    attn = sum(r.count for r in rows if "attention" in r.name.lower())
    passes = sum(r.count for r in rows if r.name in _EMBED_OPS) or 1
    if attn and any(_LAYER_RE.search(m) for m in modules):
        n = attn // passes
        return n, f"{attn} attention op(s) / {passes} embedding lookup(s) = {n} layers"
    return None, "layer count not visible"


def _scale_label(params: float) -> str:
    billions = params / 1e9
    if billions < 0.095:
        return f"~{params / 1e6:.0f}M"
    return f"~{billions:.1f}B" if billions < 10 else f"~{billions:.0f}B"


def model_identification(rows: list[dict[str, str]]) -> ModelIdentification:
    """Deterministic best guess from module names and GEMM/embedding shapes."""
    parsed = [OpRow.of(row) for row in rows]
    names = _module_names(row.frames for row in parsed)
    modules = [m.rpartition("_")[0] if m.rpartition("_")[2].isdigit() else m for m in names]
    info = ModelIdentification()
    fam = _guess_family(sorted(set(modules)))
    if fam:
        info.model, info.architecture = fam[0], fam[1]
        info.evidence.append(fam[2])
    hidden, dtypes, vocab = _shape_facts(parsed)
    if hidden:
        info.hidden_size, votes = hidden.most_common(1)[0]
        info.evidence.append(
            f"hidden size {info.hidden_size}: most common last dim of bf16/fp16 GEMM inputs "
            f"({votes} of {sum(hidden.values())} op-weighted votes)"
        )
    if dtypes:
        info.precision, n = dtypes.most_common(1)[0]
        share = 100 * n / sum(dtypes.values())
        info.evidence.append(f"precision {info.precision}: {share:.0f} % of GEMM inputs")
    if vocab:
        info.vocab_size = vocab
        info.evidence.append(f"vocab size {vocab}: largest embedding-table dim 0")
    info.num_layers, layer_note = _layer_count(names, parsed)
    info.evidence.append(layer_note)
    h, n_layers, v = info.hidden_size, info.num_layers, info.vocab_size
    if h and n_layers and v:
        params = 12 * n_layers * h * h + v * h
        info.scale = _scale_label(params)
        info.evidence.append(
            f"scale {info.scale}: 12·L·h² + V·h = 12·{n_layers}·{h}² + {v}·{h}"
            f" ≈ {params / 1e9:.2f}B"
        )
    if fam and info.scale != UNKNOWN and info.precision != UNKNOWN:
        info.confidence = "high"
    elif fam:
        info.confidence = "medium"
    return info


def condensed_csv(rows: list[dict[str, str]]) -> str:
    """`condensed_op_info.csv`: name, input types and shapes of every unified row."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CONDENSED_COLUMNS)
    writer.writerows([row[c] for c in CONDENSED_COLUMNS] for row in rows)
    return buf.getvalue()


def merged_identity(
    inferred: ModelIdentification, submitted: ModelIdentification | None
) -> ModelIdentification:
    """The inference, with every field a model (or person) submitted taking precedence."""
    if submitted is None:
        return inferred
    given = submitted.model_dump(exclude_unset=True, exclude_none=True)
    given.pop("source", None)
    note = "submitted model_info.json overrides the trace inference"
    evidence = [*given.pop("evidence", []), note]
    return inferred.model_copy(update={**given, "source": "submitted", "evidence": evidence})
