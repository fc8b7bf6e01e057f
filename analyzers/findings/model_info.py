"""Model identification data for a run: condensed op info, nn.Module names, and a best guess.

Reads ``<run>/perf_report_csvs/unified_perf_summary.csv`` and writes, under ``<run>/metadata/``:
``condensed_op_info.csv`` (name, Input type, Input Dims), ``nn_modules.txt`` (sorted unique
``nn.Module`` class names from ``call_stack_full``) and ``model_info.json`` — a deterministic
guess of family, architecture, scale and precision with its evidence. A submitted
``model_info.json`` (``<run>/model_info.json`` or a ``metadata/model_info.json`` not written by
this module) wins over the inferred values.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from rooflens.analyzers.report.write_csv import atomic_write_bytes

UNKNOWN = "Cannot be inferred from trace"
INFERRED_SOURCE = "trace_inference"
SUMMARY_CSV = Path("perf_report_csvs") / "unified_perf_summary.csv"
CONDENSED_COLUMNS = ("name", "Input type", "Input Dims")
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


def _parse(cell: str | None) -> list:
    try:
        value = json.loads(cell or "[]")
    except ValueError:
        return []
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


def read_rows(run_dir: str | Path) -> list[dict[str, str]] | None:
    """Rows of the run's unified perf summary, or None when missing / columns absent."""
    path = Path(run_dir) / SUMMARY_CSV
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            fields = set(reader.fieldnames or ())
    except OSError:
        return None
    if not {*CONDENSED_COLUMNS, "call_stack_full"} <= fields:
        return None
    return rows


def module_names(rows: list[dict[str, str]]) -> list[str]:
    """Sorted unique nn.Module class names; numeric instance suffixes (``_3``) are kept."""
    found: set[str] = set()
    for row in rows:
        for frame in _strings(_parse(row.get("call_stack_full"))):
            found.update(_MODULE_RE.findall(frame))
    return sorted(found)


def _count(row: dict[str, str]) -> int:
    try:
        return max(1, int(float(row.get("operation_count") or 1)))
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


def _shape_facts(rows: list[dict[str, str]]) -> tuple[Counter, Counter, int | None]:
    """(last-dim votes of half-precision GEMM inputs, GEMM input dtypes, embedding vocab)."""
    hidden: Counter[int] = Counter()
    dtypes: Counter[str] = Counter()
    vocab: int | None = None
    for row in rows:
        name, weight = row.get("name", ""), _count(row)
        dims, types = _parse(row.get("Input Dims")), _parse(row.get("Input type"))
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


def _layer_count(modules: list[str], rows: list[dict[str, str]]) -> tuple[int | None, str]:
    indexed: dict[str, set[str]] = {}
    for name in modules:
        base, _, idx = name.rpartition("_")
        if base and idx.isdigit() and _LAYER_RE.search(base):
            indexed.setdefault(base, set()).add(idx)
    if indexed:
        base, idxs = max(indexed.items(), key=lambda kv: (len(kv[1]), kv[0]))
        return len(idxs), f"{len(idxs)} distinct {base}_<n> instances in call stacks"
    attn = sum(_count(r) for r in rows if "attention" in r.get("name", "").lower())
    passes = sum(_count(r) for r in rows if r.get("name") in _EMBED_OPS) or 1
    if attn and any(_LAYER_RE.search(m) for m in modules):
        n = attn // passes
        return n, f"{attn} attention op(s) / {passes} embedding lookup(s) = {n} layers"
    return None, "layer count not visible"


def _scale_label(params: float) -> str:
    billions = params / 1e9
    if billions < 0.095:
        return f"~{params / 1e6:.0f}M"
    return f"~{billions:.1f}B" if billions < 10 else f"~{billions:.0f}B"


def model_identification(run_dir: str | Path) -> ModelIdentification:
    """Deterministic best guess from module names and GEMM/embedding shapes."""
    rows = read_rows(run_dir)
    if rows is None:
        return ModelIdentification(evidence=[f"{SUMMARY_CSV} missing or lacks required columns"])
    modules = [
        m.rpartition("_")[0] if m.rpartition("_")[2].isdigit() else m for m in module_names(rows)
    ]
    info = ModelIdentification()
    fam = _guess_family(sorted(set(modules)))
    if fam:
        info.model, info.architecture = fam[0], fam[1]
        info.evidence.append(fam[2])
    hidden, dtypes, vocab = _shape_facts(rows)
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
    info.num_layers, layer_note = _layer_count(module_names(rows), rows)
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


def _submitted(run: Path) -> dict | None:
    for path in (run / "model_info.json", run / "metadata" / "model_info.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("source") != INFERRED_SOURCE:
            return data
    return None


def write_model_identification(run_dir: str | Path) -> ModelIdentification | None:
    """Write the metadata files; returns the (merged) identification, None without the CSV."""
    run = Path(run_dir)
    rows = read_rows(run)
    if rows is None:
        return None
    meta = run / "metadata"
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CONDENSED_COLUMNS)
    writer.writerows([row.get(c, "") for c in CONDENSED_COLUMNS] for row in rows)
    atomic_write_bytes(meta / "condensed_op_info.csv", buf.getvalue().encode("utf-8"))
    names = module_names(rows)
    text = "".join(f"{n}\n" for n in names)
    atomic_write_bytes(meta / "nn_modules.txt", text.encode("utf-8"))
    inferred = model_identification(run).model_dump()
    submitted = _submitted(run)
    if submitted is not None:
        merged = {**inferred, **{k: v for k, v in submitted.items() if v is not None}}
        merged["source"] = "submitted"
        note = "submitted model_info.json overrides the trace inference"
        merged["evidence"] = [*(submitted.get("evidence") or []), note]
    else:
        merged = inferred
    out = json.dumps(merged, indent=2, ensure_ascii=False) + "\n"
    atomic_write_bytes(meta / "model_info.json", out.encode("utf-8"))
    return ModelIdentification.model_validate(
        {k: merged[k] for k in ModelIdentification.model_fields if k in merged}
    )
