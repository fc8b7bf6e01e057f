"""Every known bad input, generated on demand (no checked-in blobs), with the expected outcome.

The bad-input tests (tests/badinput) use `CASES`: each `Case` writes its file into a
folder and says whether the engine must refuse it (`TraceError` whose message contains
`message`) or load it with the bad events skipped and counted (`skipped` is the exact
`health.skipped_events`, `malformed` must be a subset of `health.malformed_values`, and
`message`, when set, is a health warning code that must be present). The valid parts come
from the repo's own sample trace (`synthetic.write_sample_trace`): 292 events, 47 kernels and
one memcpy, all linked.
Every event a case makes unusable (other than non-object entries) is a kernel, so a loaded
case has `SAMPLE_GPU_EVENTS - skipped` GPU events.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from rooflens.analyzers.synthetic.sample import write_sample_trace

Document = dict[str, Any]
DEEP = 10_000  # nesting levels: far past any recursion limit
SAMPLE_GPU_EVENTS = 48


@functools.cache
def _sample_text() -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        return gzip.decompress(write_sample_trace(Path(folder) / "sample.json.gz").read_bytes())


def sample_document() -> Document:
    """A fresh (mutable) copy of the sample trace as a JSON document."""
    return json.loads(_sample_text())


def sample_bytes() -> bytes:
    return _sample_text()


def events_of(doc: Document, cat: str) -> list[dict[str, Any]]:
    return [e for e in doc["traceEvents"] if e.get("cat") == cat]


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


@dataclass(frozen=True)
class Case:
    """One bad input: how to write it and what the engine must make of it."""

    name: str
    build: Callable[[Path], Path] = field(repr=False)
    outcome: Literal["refused", "loaded"]
    message: str = ""
    skipped: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    malformed: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    limit_mb: float | None = None  # ROOFLENS_MAX_TRACE_MB the test must set
    needs: str | None = None  # an os function the platform must offer (mkfifo)
    same_timeline: bool = False  # the damage leaves GPU times alone: timeline == sample's

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        return self.build(folder)

    def available(self) -> bool:
        return self.needs is None or hasattr(os, self.needs)


# --- writers ----------------------------------------------------------------------------------


def _bytes_file(name: str, data: bytes | Callable[[], bytes]) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        path = folder / name
        path.write_bytes(data() if callable(data) else data)
        return path

    return build


def _doc_file(
    name: str, mutate: Callable[[Document], Any], raw: Mapping[str, str] | None = None
) -> Callable[[Path], Path]:
    """The sample document changed in place by `mutate`, written as JSON (gzip for .gz).

    `raw` swaps quoted placeholders for text json.dumps cannot write (NaN, 1e400, deep
    nesting, lone surrogate escapes, raw control characters).
    """

    def data() -> bytes:
        doc = sample_document()
        mutate(doc)
        text = json.dumps(doc, separators=(",", ":"))
        for placeholder, value in (raw or {}).items():
            assert f'"{placeholder}"' in text, placeholder
            text = text.replace(f'"{placeholder}"', value)
        encoded = text.encode()
        return gzip.compress(encoded, mtime=0) if name.endswith(".gz") else encoded

    return _bytes_file(name, data)


def _fifo(folder: Path) -> Path:
    path = folder / "pipe.json"
    os.mkfifo(path)
    return path


def _folder(folder: Path) -> Path:
    path = folder / "folder.json"
    path.mkdir()
    return path


def _bomb() -> bytes:
    """A ~5 KB gzip member inflating to 5 MB of JSON (one long name), for a 1 MB limit."""
    doc = sample_document()
    doc["traceEvents"][0]["args"]["name"] = "x" * (5 * 2**20)
    return gzip.compress(json.dumps(doc).encode(), compresslevel=9, mtime=0)


def _truncated_gzip() -> bytes:
    whole = gzip.compress(sample_bytes(), mtime=0)
    return whole[: len(whole) // 2]


# --- event mutations --------------------------------------------------------------------------


def _drop_names(doc: Document) -> None:
    for event in events_of(doc, "kernel")[:3]:
        del event["name"]


def _control_names(doc: Document) -> None:
    ops = events_of(doc, "cpu_op")
    ops[1]["name"] = "aten::mm\u0000evil"
    for event in events_of(doc, "cpu_op"):
        if event["name"] == "aten::addmm":
            event["name"] = "aten::addmm\u0001\u001f\ufffe"
    events_of(doc, "kernel")[0]["name"] += "\u0007bell"


def _junk_shapes(doc: Document) -> None:
    junk = [
        "abc",
        [["x"], {"a": 1}],
        [1.5, "2", None],
        [[True, [[[]]]]],
        7,
        {"k": [1]},
        [[4, "512", 1024], [1024, 3072], [3072]],
        [["a", "b"], ["c", "d"]],
        [[2.5, 3], [3, 4]],
        [[-4, 512], [512, -8]],
        [[1e30, 2], [2, 3]],
        [[2**70, 2], [2, 3]],
    ]
    for i, event in enumerate(e for e in events_of(doc, "cpu_op") if "args" in e):
        event["args"]["Input Dims"] = junk[i % len(junk)]
        if i % 3 == 0:
            event["args"]["Input type"] = [["c10::BFloat16"], 5, None]
        if i % 4 == 0:
            event["args"]["Input Strides"] = "strides"
            event["args"]["Concrete Inputs"] = [{"x": 1}, [2], None]


def _set_on_kernels(key: str, values: list[Any]) -> Callable[[Document], None]:
    def mutate(doc: Document) -> None:
        for event, value in zip(events_of(doc, "kernel"), values, strict=False):
            if value is _DELETE:
                del event[key]
            elif value is not _KEEP:
                event[key] = value

    return mutate


_DELETE, _KEEP = object(), object()


def _args_not_objects(doc: Document) -> None:
    events_of(doc, "kernel")[0]["args"] = [1, 2]
    events_of(doc, "cpu_op")[3]["args"] = "Input Dims"


def _not_objects(doc: Document) -> None:
    doc["traceEvents"][10:10] = [5, "event", None, [1, 2]]


def _deep_arg(doc: Document) -> None:
    events_of(doc, "cpu_op")[5]["args"]["Unknown arg"] = "@DEEP@"


def _deep_metadata(doc: Document) -> None:
    doc["metadata"] = {"nest": "@DEEP@"}


def _renamed(cat: str, index: int, placeholder: str) -> Callable[[Document], None]:
    def mutate(doc: Document) -> None:
        events_of(doc, cat)[index]["name"] = placeholder

    return mutate


def _both(*mutations: Callable[[Document], None]) -> Callable[[Document], None]:
    def mutate(doc: Document) -> None:
        for m in mutations:
            m(doc)

    return mutate


def _refused(name: str, build: Callable[[Path], Path], message: str, **kw: Any) -> Case:
    return Case(name, build, "refused", message, **kw)


def _loaded(name: str, build: Callable[[Path], Path], message: str = "", **kw: Any) -> Case:
    for key in ("skipped", "malformed"):
        kw[key] = MappingProxyType(kw.get(key, {}))
    return Case(name, build, "loaded", message, **kw)


def _encoded(name: str, codec: str) -> Callable[[Path], Path]:
    return _bytes_file(name, lambda: sample_bytes().decode().encode(codec))


def _kernel_ts(placeholder: str) -> Callable[[Document], None]:
    return _set_on_kernels("ts", [placeholder])


DEEP_TEXT = {"@DEEP@": _nested(DEEP)}
SKIPPED = "skipped_events"  # the health warning code of skipped events

CASES: tuple[Case, ...] = (
    # structure and file kind
    _refused("deep_nesting_in_events", _doc_file("deep.json", _deep_arg, DEEP_TEXT),
             "nested too deeply"),
    _refused("deep_nesting_in_metadata", _doc_file("deep_meta.json", _deep_metadata, DEEP_TEXT),
             "nested too deeply"),
    _refused("empty_file", _bytes_file("empty.json", b""), "is empty"),
    _refused("empty_gzip", _bytes_file("empty.json.gz", gzip.compress(b"", mtime=0)), "is empty"),
    _refused("whitespace_only", _bytes_file("blank.json", b" \n\t "), "is empty"),
    _refused("truncated_gzip", _bytes_file("cut.json.gz", _truncated_gzip),
             "gzip stream is truncated"),
    _refused("truncated_json", _bytes_file("cut.json", lambda: sample_bytes()[:30_000]),
             "cut short"),
    _refused("directory_named_json", _folder, "is a folder"),
    _refused("fifo_named_json", _fifo, "not a regular file", needs="mkfifo"),
    _refused("gzip_bomb", _bytes_file("bomb.json.gz", _bomb), "inflates past the 1 MB limit",
             limit_mb=1.0),
    _refused("plain_json_over_limit", _bytes_file("big.json", sample_bytes),
             "over the 0.01 MB limit", limit_mb=0.01),
    # encodings, and literals JSON does not allow
    _loaded("utf8_bom", _bytes_file("bom.json", lambda: b"\xef\xbb\xbf" + sample_bytes()),
            same_timeline=True),
    _refused("utf16_le_bom", _encoded("utf16.json", "utf-16"), "UTF-16"),
    _refused("utf16_be_no_bom", _encoded("utf16be.json", "utf-16-be"), "UTF-16"),
    _refused("utf32", _encoded("utf32.json", "utf-32"), "UTF-32"),
    _refused("nan_literal", _doc_file("nan.json", _kernel_ts("@X@"), {"@X@": "NaN"}),
             "NaN is not valid JSON"),
    _refused("infinity_literal", _doc_file("inf.json", _kernel_ts("@X@"), {"@X@": "Infinity"}),
             "Infinity is not valid JSON"),
    _refused("negative_infinity_literal",
             _doc_file("ninf.json", _kernel_ts("@X@"), {"@X@": "-Infinity"}),
             "-Infinity is not valid JSON"),
    _refused("raw_control_character",
             _doc_file("ctrl.json", _renamed("cpu_op", 0, "@X@"), {"@X@": '"aten::\x01mm"'}),
             "control character"),
    _loaded("lone_surrogates",
            _doc_file("surrogate.json",
                      _both(_renamed("cpu_op", 0, "@A@"), _renamed("kernel", 0, "@B@")),
                      {"@A@": '"aten::\\ud800mm"', "@B@": '"gemm\\udc00"'}),
            "malformed_values", same_timeline=True),
    # events the analysis cannot use: skipped and counted
    _loaded("nameless_gpu_events", _doc_file("noname.json", _drop_names), SKIPPED,
            skipped={"no_name": 3}),
    _loaded("control_characters_in_names", _doc_file("nul.json", _control_names),
            same_timeline=True),
    _loaded("non_numeric_shapes", _doc_file("shapes.json", _junk_shapes), same_timeline=True),
    _loaded("text_times",
            _doc_file("text_ts.json", _set_on_kernels("ts", ["abc", "12x", "6120000100.5"])),
            SKIPPED, skipped={"time_missing": 2}, malformed={"ts": 2}),
    _loaded("missing_times",
            _doc_file("no_ts.json", _both(_set_on_kernels("ts", [_DELETE]),
                                          _set_on_kernels("dur", [1.0, _DELETE, None]))),
            SKIPPED, skipped={"time_missing": 3}),
    _loaded("negative_durations", _doc_file("neg.json", _set_on_kernels("dur", [-1.0, -1e9])),
            SKIPPED, skipped={"negative_duration": 2}),
    _loaded("absurd_durations", _doc_file("absurd.json", _set_on_kernels("dur", [1e300, 1e12])),
            SKIPPED, skipped={"time_out_of_range": 2}),
    _loaded("absurd_starts", _doc_file("absurd_ts.json", _set_on_kernels("ts", [1e300, -1e30])),
            SKIPPED, skipped={"time_out_of_range": 2}),
    _loaded("overflowing_numbers",
            _doc_file("overflow.json", _both(_set_on_kernels("dur", ["@A@"]),
                                             _set_on_kernels("ts", [_KEEP, "@B@"])),
                      {"@A@": "1e400", "@B@": "-1e999"}),
            SKIPPED, skipped={"time_out_of_range": 2}),
    _loaded("args_not_objects", _doc_file("args.json", _args_not_objects), "malformed_values",
            malformed={"args": 2}),
    _loaded("entries_not_objects", _doc_file("entries.json", _not_objects), SKIPPED,
            skipped={"not_an_object": 4}, same_timeline=True),
)  # fmt: skip

CASES_BY_NAME: dict[str, Case] = {case.name: case for case in CASES}


def write_all(folder: Path) -> dict[str, Path]:
    """Write every available case into `folder/<case name>/`; returns name -> path."""
    return {c.name: c.write(folder / c.name) for c in CASES if c.available()}
