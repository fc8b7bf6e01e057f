"""The mutations of the bad-input fuzzer (fuzz.py): how a valid trace gets damaged.

Document mutations change the parsed trace through `Damage`, which copies only what it
changes, so a case costs one serialisation of the trace, not a deep copy of it. Byte
mutations damage the serialised text (cut it, flip bytes, re-encode it, break the gzip).
Every choice comes from the case's `random.Random`, so a seed always gives the same damage.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CATEGORIES = ("kernel", "cpu_op", "cuda_runtime", "python_function", "ac2g", "gpu_memcpy",
              "user_annotation", "gpu_memset", "cuda_driver", "Kernel", "Runtime", "")  # fmt: skip
PHASES = ("X", "B", "E", "i", "I", "s", "f", "t", "M", "C", "", "x")
ARG_KEYS = ("correlation", "External id", "Input Dims", "Input type", "Concrete Inputs",
            "stream", "device", "Sequence number", "Python id", "Python parent id", "grid",
            "Collective name", "name")  # fmt: skip
# "@@...@@" are spliced in as raw text: numbers beyond float range (JSON allows them; msgspec
# reads them as ±inf). NaN/Infinity literals, which JSON does not allow, come from bad_literal.
OUT_OF_RANGE = {"@@big@@": "1e400", "@@-big@@": "-1e999", "@@tiny@@": "1e-400"}
NUMBERS = (*OUT_OF_RANGE, 1e300, -1e300, 2**64, -(2**63) - 1, -1, 0, 5e-324, 1e18, -1e9, 1.5,
           "12", "abc", "", True, None)  # fmt: skip
TEXTS = ("a\x00b", "\x01\x1f\x7f", "\ud800x", "x\udc00", "\u202eevil\u202c", "😀" * 3, "",
         " ", "x" * 100_000, "\ufffe\uffff", "<sheet>&amp;", "=cmd|' /C calc'!A0")  # fmt: skip


@dataclass(frozen=True)
class Base:
    """The valid trace every case starts from (never modified)."""

    doc: dict[str, Any]

    @classmethod
    def from_file(cls, path: Path) -> Base:
        raw = Path(path).read_bytes()
        doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
        return cls(doc if isinstance(doc, dict) else {"traceEvents": doc})


class Damage:
    """A copy-on-write view of the base document that mutators change."""

    def __init__(self, base: Base, rng: random.Random) -> None:
        self.rng = rng
        self.doc = dict(base.doc)
        self.events: list[Any] = list(base.doc["traceEvents"])
        self.doc["traceEvents"] = self.events
        self._owned: set[int] = set()
        self.raw: dict[str, str] = dict(OUT_OF_RANGE)  # placeholder -> raw JSON text

    def nested(self) -> str:
        """A placeholder for arrays/objects nested up to 5000 deep (spliced in as text)."""
        rng = self.rng
        depth = rng.choice([20, 200, 900, 990, 1100, 5000])
        opener, closer = ("[", "]") if rng.random() < 0.7 else ('{"k":', "}")
        placeholder = f"@@deep{len(self.raw)}@@"
        self.raw[placeholder] = opener * depth + rng.choice(["1", '"x"', "[]"]) + closer * depth
        return placeholder

    def index(self, cat: str | None = None) -> int:
        """A random event position, of category `cat` when it has any."""
        rng, events = self.rng, self.events
        if cat is not None:
            hits = [i for i, e in enumerate(events) if isinstance(e, dict) and e.get("cat") == cat]
            if hits:
                return rng.choice(hits)
        return rng.randrange(len(events))

    def event(self, i: int) -> dict[str, Any]:
        """Event `i`, copied (with its args) the first time it is changed."""
        if i not in self._owned:
            event = self.events[i]
            event = dict(event) if isinstance(event, dict) else {"junk": event}
            if isinstance(event.get("args"), dict):
                event["args"] = dict(event["args"])
            self.events[i] = event
            self._owned.add(i)
        return self.events[i]

    def pick(self) -> dict[str, Any]:
        cat = self.rng.choice([None, "kernel", "cpu_op", "cuda_runtime", "ac2g"])
        return self.event(self.index(cat))

    def junk(self, depth: int = 0) -> Any:
        rng = self.rng
        choice = rng.randrange(6 if depth < 2 else 4)
        if choice == 0:
            return rng.choice(NUMBERS)
        if choice == 1:
            return rng.choice(TEXTS)
        if choice == 2:
            return rng.randint(-(2**70), 2**70)
        if choice == 3:
            return rng.random() * 10 ** rng.randint(-5, 20)
        if choice == 4:
            return [self.junk(depth + 1) for _ in range(rng.randint(0, 4))]
        return {rng.choice(ARG_KEYS): self.junk(depth + 1) for _ in range(rng.randint(0, 3))}


# --- document mutations -------------------------------------------------------------------


def delete_field(d: Damage) -> None:
    event = d.pick()
    if event:
        del event[d.rng.choice(sorted(event))]


def retype_field(d: Damage) -> None:
    event = d.pick()
    event[d.rng.choice(["ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args"])] = d.junk()


def swap_fields(d: Damage) -> None:
    event = d.pick()
    keys = sorted(event)
    if len(keys) >= 2:
        a, b = d.rng.sample(keys, 2)
        event[a], event[b] = event[b], event[a]


def bad_number(d: Damage) -> None:
    event = d.pick()
    key = d.rng.choice(["ts", "dur", "ts", "dur", "pid", "tid", "id"])
    value = d.rng.choice(NUMBERS)
    args = event.get("args")
    if isinstance(args, dict) and d.rng.random() < 0.4:
        args[d.rng.choice(ARG_KEYS[:9])] = value
    else:
        event[key] = value


def unicode_text(d: Damage) -> None:
    event = d.pick()
    event["name" if d.rng.random() < 0.8 else "cat"] = d.rng.choice(TEXTS)


def deep_value(d: Damage) -> None:
    if d.rng.random() < 0.2:
        d.doc["metadata"] = {"nest": d.nested()}
        return
    event = d.pick()
    if isinstance(event.get("args"), dict) and d.rng.random() < 0.6:
        event["args"][d.rng.choice(ARG_KEYS)] = d.nested()
    else:
        event[d.rng.choice(["name", "ts", "args", "pid"])] = d.nested()


def duplicate_ids(d: Damage) -> None:
    rng = d.rng
    if rng.random() < 0.5:
        key = rng.choice(["correlation", "External id"])
        value = rng.choice([1, 0, -1, 100, 2**40])
        for _ in range(rng.randint(2, 20)):
            args = d.pick().get("args")
            if isinstance(args, dict):
                args[key] = value
    else:
        start = d.index()
        d.events.extend(d.events[start : start + rng.randint(1, 50)])  # the same events again


def flip_phase(d: Damage) -> None:
    for _ in range(d.rng.randint(1, 10)):
        d.pick()["ph"] = d.rng.choice(PHASES)


def damage_args(d: Damage) -> None:
    event = d.pick()
    choice = d.rng.randrange(4)
    if choice == 0:
        event["args"] = d.rng.choice([[1, 2], "Input Dims", None, 5, {}, True])
    elif choice == 1 and isinstance(event.get("args"), dict):
        event["args"]["Input Dims"] = d.junk()
    else:
        event.setdefault("args", {})
        if isinstance(event["args"], dict):
            event["args"][d.rng.choice(ARG_KEYS)] = d.junk()


def perf_inputs(d: Damage) -> None:
    """Plausible-looking but wrong operator inputs: what perf models divide and multiply."""
    rng = d.rng
    args = d.event(d.index("cpu_op")).get("args")
    if not isinstance(args, dict):
        return
    dims = args.get("Input Dims")
    choice = rng.randrange(5)
    if choice == 0 and isinstance(dims, list):  # zero, huge or dropped sizes
        scale = rng.choice([0, 2**20, 2**31, 2**40])
        args["Input Dims"] = [
            [scale if isinstance(s, int) else s for s in t] if isinstance(t, list) else t
            for t in dims
        ]
    elif choice == 1 and isinstance(dims, list) and dims:
        del dims[rng.randrange(len(dims))]  # one input fewer than types and strides
        args["Input Dims"] = dims
    elif choice == 2:
        args["Input type"] = rng.choice([["float8"], ["c10::Weird", 5], [], ["Scalar"] * 9])
    elif choice == 3:
        values = ["nan", "inf", "-1", "1e400", "abc", "[1, 2]", "0", "-inf", "True"]
        args["Concrete Inputs"] = [rng.choice(values) for _ in range(rng.randint(1, 8))]
    else:
        args["Input Strides"] = d.junk()


def change_category(d: Damage) -> None:
    for _ in range(d.rng.randint(1, 10)):
        d.pick()["cat"] = d.rng.choice(CATEGORIES)


def drop_or_shuffle(d: Damage) -> None:
    rng, events = d.rng, d.events
    start = d.index()
    stop = min(len(events), start + rng.randint(1, max(1, len(events) // 4)))
    if rng.random() < 0.5:
        del events[start:stop]
        if not events:
            events.append({})
        d._owned.clear()  # positions moved: copy again before changing
    else:
        chunk = events[start:stop]
        rng.shuffle(chunk)
        events[start:stop] = chunk
        d._owned.clear()


def time_warp(d: Damage) -> None:
    event = d.event(d.index("kernel"))
    if isinstance(event.get("ts"), int | float) and isinstance(event.get("dur"), int | float):
        choice = d.rng.randrange(3)
        if choice == 0:  # end before start
            event["ts"], event["dur"] = event["ts"] + event["dur"], -event["dur"]
        elif choice == 1:  # far away in time
            event["ts"] = event["ts"] + d.rng.choice([1e9, -1e9, 1e15, -1e15])
        else:  # overlapping everything
            event["ts"], event["dur"] = event["ts"] - 1e6, 2e6


def insert_entries(d: Damage) -> None:
    at = d.index()
    d.events[at:at] = [d.junk() for _ in range(d.rng.randint(1, 5))]
    d._owned.clear()


def break_flows(d: Damage) -> None:
    for _ in range(d.rng.randint(1, 10)):
        event = d.event(d.index("ac2g"))
        event[d.rng.choice(["id", "ph", "pid", "tid", "bp"])] = d.rng.choice((*NUMBERS, "s"))


def graph_launch(d: Damage) -> None:
    event = d.event(d.index("cuda_runtime"))
    event["name"] = d.rng.choice(["cudaGraphLaunch", "hipGraphLaunch", "cudaStreamBeginCapture"])


TOP_KEYS = ("traceEvents", "deviceProperties", "distributedInfo", "schemaVersion",
            "baseTimeNanoseconds", "record_shapes", "displayTimeUnit", "metadata")  # fmt: skip


def top_level(d: Damage) -> None:
    key = d.rng.choice(TOP_KEYS)
    if key == "traceEvents" and d.rng.random() < 0.7:
        key = "metadata"  # losing every event is one case; do not make it most of them
    d.doc[key] = d.junk()


DOCUMENT_MUTATIONS: tuple[Callable[[Damage], None], ...] = (
    delete_field, retype_field, swap_fields, bad_number, unicode_text, deep_value,
    duplicate_ids, flip_phase, damage_args, perf_inputs, change_category, drop_or_shuffle,
    time_warp, insert_entries, break_flows, graph_launch, top_level,
)  # fmt: skip


# --- byte mutations ---------------------------------------------------------------------------


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data))]


def flip_bytes(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def bad_literal(rng: random.Random, data: bytes) -> bytes:
    at = data.find(b'"dur":', rng.randrange(len(data)))
    if at < 0:
        return data
    literal = rng.choice([b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e999", b"1e-400"])
    return data[: at + 6] + literal + b',"was":' + data[at + 6 :]


def encoding(rng: random.Random, data: bytes) -> bytes:
    choice = rng.randrange(4)
    if choice == 0:
        return b"\xef\xbb\xbf" + data
    text = data.decode("utf-8", "surrogatepass")
    codec = ("utf-16", "utf-16-le", "utf-32")[choice - 1]
    return text.encode(codec, "surrogatepass")


def control_char(rng: random.Random, data: bytes) -> bytes:
    at = data.find(b'"name":"', rng.randrange(len(data)))
    if at < 0:
        return data
    at += 8
    return data[:at] + bytes([rng.randrange(0x20)]) + data[at:]


BYTE_MUTATIONS: tuple[Callable[[random.Random, bytes], bytes], ...] = (
    truncate, flip_bytes, bad_literal, encoding, control_char,
)  # fmt: skip


def gzip_damage(rng: random.Random, data: bytes) -> bytes:
    """Gzip the text; now and then truncate, corrupt or extend the stream."""
    packed = gzip.compress(data, compresslevel=1, mtime=0)
    choice = rng.randrange(8)
    if choice == 0:
        return packed[: rng.randrange(len(packed))]
    if choice == 1:
        return packed + rng.choice([b"\x00" * 16, b"garbage", packed])
    if choice == 2:
        damaged = bytearray(packed)
        damaged[rng.randrange(10, len(damaged))] ^= 0xFF
        return bytes(damaged)
    return packed
