"""`annotated_trace.json.gz` (docs/trace-viewer.md): a generated trace's events kept, the
findings' tracks added, every mark inside the trace, the planted idle gap and slow kernel
where the generator put them; the streaming splice on the JSON forms a trace can take."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

import pytest

import rooflens
from rooflens.analyzers import layout
from rooflens.analyzers.findings.composing.trace_tracks import PROCESS_NAME
from rooflens.analyzers.pipeline import annotated_trace
from rooflens.analyzers.pipeline.annotated_trace import NotATraceDocument, write_annotated
from rooflens.cli.main import main as cli
from tests.helpers.findings_trace import Planted, write_findings_trace


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Planted, Path]:
    folder = tmp_path_factory.mktemp("annotated")
    found = write_findings_trace(folder / "loop.json.gz")
    run = rooflens.analyze(found.path, platform="H100_SXM")
    return found, run.save(folder / "run")


def _document(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def _tracks(events: list[dict]) -> tuple[int, dict[int, str], list[dict]]:
    """The findings' pid, its thread names by tid and its complete events."""
    (pid,) = {e["pid"] for e in events if e.get("name") == "process_name"
              and e["args"]["name"] == PROCESS_NAME}  # fmt: skip
    names = {e["tid"]: e["args"]["name"] for e in events
             if e["pid"] == pid and e.get("name") == "thread_name"}  # fmt: skip
    return pid, names, [e for e in events if e["pid"] == pid and e["ph"] == "X"]


def test_the_trace_keeps_its_events_and_gains_a_findings_process(planted) -> None:
    found, run = planted
    original = _document(found.path)
    annotated = _document(run / layout.ANNOTATED_TRACE)
    assert annotated["displayTimeUnit"] == original["displayTimeUnit"] == "ms"
    assert {k: v for k, v in annotated.items() if k != "traceEvents"} == {
        k: v for k, v in original.items() if k != "traceEvents"
    }
    events = annotated["traceEvents"]
    kept = events[len(events) - len(original["traceEvents"]) :]
    assert kept == original["traceEvents"]  # every event as it was, after the tracks
    pid, names, marks = _tracks(events[: len(events) - len(kept)])
    assert pid not in {e.get("pid") for e in kept}
    assert names[1] == "Iterations and warm-up"
    assert "Idle: input pipeline (DataLoader)" in names.values()
    assert {n.split(":")[0] for n in names.values() if n.startswith("P")} >= {"P1", "P2"}
    assert [m["name"] for m in marks if m["tid"] == 1] == [
        f"ProfilerStep#{k}" for k in (1, 2, 3, 4)
    ]


def test_every_mark_lies_inside_the_trace_and_none_overlaps_on_its_track(planted) -> None:
    found, run = planted
    _, _, marks = _tracks(_document(run / layout.ANNOTATED_TRACE)["traceEvents"])
    first, last = found.span
    assert marks and all(first <= m["ts"] and m["ts"] + m["dur"] <= last for m in marks)
    by_track: dict[int, list[tuple[float, float]]] = {}
    for m in marks:
        by_track.setdefault(m["tid"], []).append((m["ts"], m["ts"] + m["dur"]))
    for spans in by_track.values():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))


def test_the_planted_gap_and_slow_kernel_are_where_the_generator_put_them(planted) -> None:
    found, run = planted
    _, names, marks = _tracks(_document(run / layout.ANNOTATED_TRACE)["traceEvents"])
    idle = [m for m in marks if names[m["tid"]].startswith("Idle: ")]
    start, end = found.gap
    inside = sorted((m["ts"], m["ts"] + m["dur"]) for m in idle
                    if start <= m["ts"] < end)  # fmt: skip
    # the causes' pieces tile the planted gap: from the last kernel's end to the next start
    assert inside[0][0] == pytest.approx(start, abs=1e-3)
    assert inside[-1][1] == pytest.approx(end, abs=1e-3)
    assert sum(b - a for a, b in inside) == pytest.approx(end - start, abs=1e-3)
    loader = next(t for t, n in names.items() if n == "Idle: input pipeline (DataLoader)")
    (fetch,) = [m for m in marks if m["tid"] == loader]
    assert fetch["ts"] + fetch["dur"] == pytest.approx(found.loader[1], abs=1e-3)
    slow = next(t for t, n in names.items() if "aten::add" in n)
    got = sorted((m["ts"], m["ts"] + m["dur"]) for m in marks if m["tid"] == slow)
    flat = [t for pair in found.slow for t in pair]
    assert [t for pair in got for t in pair] == pytest.approx(flat, abs=1e-3)
    (args,) = {json.dumps(m["args"], sort_keys=True) for m in marks if m["tid"] == slow}
    assert json.loads(args)["ranges_in_all"] == len(found.slow) == 4


def test_priorities_and_the_report_give_the_same_ranges(planted) -> None:
    found, run = planted
    data = json.loads((run / layout.PRIORITIES).read_text())
    slow = next(p for p in data["priorities"] if "aten::add" in p["title"])
    ranges = slow["time_ranges"]
    assert ranges["count"] == 4 and ranges["first_us"] == found.slow[0][0]
    assert ranges["last_us"] == found.slow[-1][1]
    line = f"Where in the trace: 4 ranges, 3.20 ms in all, from {found.slow[0][0]:,.0f} to "
    assert line in (run / layout.REPORT).read_text()


@pytest.mark.slow  # a CLI run (it starts the plot's helper process)
def test_the_command_line_can_leave_it_out(planted, tmp_path: Path, capsys) -> None:
    found, _ = planted
    out = tmp_path / "run"
    args = ["analyze", str(found.path), "--platform", "H100_SXM", "--out", str(out)]
    assert cli([*args, "--no-annotated-trace"]) == 0
    assert not (out / layout.ANNOTATED_TRACE).exists() and (out / layout.REPORT_HTML).is_file()
    printed = capsys.readouterr().out
    assert "Trace with the findings" not in printed
    assert f"Page: {out / layout.REPORT_HTML}" in printed


MARK = {"ph": "X", "name": "m", "pid": 9, "tid": 1, "ts": 5, "dur": 1}


@pytest.mark.parametrize(
    ("text", "events"),
    [
        ('{"traceEvents": [{"ph": "X", "ts": 1}], "x": 1}', [MARK, {"ph": "X", "ts": 1}]),
        ('\ufeff [ {"ph": "X", "ts": 1} ]', [MARK, {"ph": "X", "ts": 1}]),
        ('{"traceEvents": [ ], "displayTimeUnit": "ns"}', [MARK]),
        # the key's bytes inside a string, and an earlier nested traceEvents, are not it
        (
            '{"a": "x\\"traceEvents\\": [", "b": {"traceEvents": [1]}, "traceEvents": [2]}',
            [MARK, 2],
        ),
    ],
)
@pytest.mark.parametrize("block", [3, 1 << 20])
@pytest.mark.parametrize("gz", [False, True, "members", "padded"])
def test_the_splice_puts_the_marks_first_in_the_event_array(
    tmp_path: Path, monkeypatch, text: str, events: list, block: int, gz: bool
) -> None:
    monkeypatch.setattr(annotated_trace, "BLOCK", block)
    data = text.encode("utf-8")
    source = tmp_path / ("t.json.gz" if gz else "t.json")
    if gz == "members":  # two gzip members, as concatenated files are
        half = len(data) // 2
        source.write_bytes(gzip.compress(data[:half]) + gzip.compress(data[half:]))
    else:  # zero padding after the stream is a trace the reader accepts
        padding = b"\0" * 7 if gz == "padded" else b""
        source.write_bytes(gzip.compress(data) + padding if gz else data)
    written = json.loads(gzip.decompress(write_annotated(source, [MARK], tmp_path / "a.gz")
                                         .read_bytes()).decode("utf-8-sig"))  # fmt: skip
    got = written if isinstance(written, list) else written["traceEvents"]
    assert got == events
    if isinstance(written, dict):
        original = json.loads(data)
        assert {k: v for k, v in written.items() if k != "traceEvents"} == {
            k: v for k, v in original.items() if k != "traceEvents"
        }


def test_a_document_without_an_event_array_writes_nothing(tmp_path: Path) -> None:
    source = tmp_path / "t.json"
    source.write_text('{"traceEvents": {"no": "array"}}')
    with pytest.raises(NotATraceDocument):
        write_annotated(source, [MARK], tmp_path / "a.gz")
    assert list(tmp_path.iterdir()) == [source]  # no file, no temporary left behind


def test_a_trace_rewritten_before_the_report_costs_only_the_annotated_file(
    tmp_path: Path, caplog
) -> None:
    """The annotated file reads the trace again when the report is written; a trace file
    rewritten by then into another shape leaves the report whole, without that file, and
    says so in the log."""
    found = write_findings_trace(tmp_path / "loop.json.gz")
    run = rooflens.analyze(found.path, platform="H100_SXM")
    found.path.write_bytes(gzip.compress(b'{"traceEvents": {"no": "array"}}'))
    with caplog.at_level("WARNING"):
        folder = run.save(tmp_path / "run")
    assert (folder / layout.REPORT).is_file() and (folder / layout.REPORT_HTML).is_file()
    assert not (folder / layout.ANNOTATED_TRACE).exists()
    assert f"no {layout.ANNOTATED_TRACE} for loop.json.gz" in caplog.text
