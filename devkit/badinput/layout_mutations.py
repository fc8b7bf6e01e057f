"""Mutations that keep a trace readable but change its layout or its timing, as traces from
other profiler versions, clocks and exporters do (the damaging ones are in mutations.py).

* `zero_length`, `equal_times`, `whole_microseconds`: GPU work shorter than the clock's
  resolution written as `"dur": 0`, events sharing a start or touching, every time rounded
  down to a whole microsecond (Kineto before 2022);
* `kernel_field`: one field of one GPU event changed: dur, ts, correlation, stream or device;
* `old_categories`, `string_tids`, `format_2021`: the 2021 category names (`Kernel`,
  `Runtime`, `Memcpy`, `Operator`, flows in `async`), thread ids written as strings
  (`"24572"`, `"stream 7"`), and all of it at once with the lower-case `external id`;
* `orphans`: flows, launch calls or GPU events removed, so kernels lose their launch and
  launches their kernel; `reorder`: the events in another order (shuffled, reversed, by
  start time), which the Chrome trace format allows.

Every choice comes from the case's `random.Random` (`Damage.rng`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from devkit.badinput.mutations import Damage

GPU = ("kernel", "gpu_memcpy", "gpu_memset")
OLD_NAMES = {"kernel": "Kernel", "cuda_runtime": "Runtime", "cuda_driver": "Driver",
             "gpu_memcpy": "Memcpy", "gpu_memset": "Memset", "cpu_op": "Operator"}  # fmt: skip
FLOW_2021 = {"cat": "async", "name": "launch"}


def _of(d: Damage, cats: tuple[str, ...]) -> list[int]:
    return [i for i, e in enumerate(d.events) if isinstance(e, dict) and e.get("cat") in cats]


def _some(d: Damage, indices: list[int]) -> list[int]:
    """One, a few, or a random share of `indices` (all of them now and then)."""
    if not indices:
        return []
    rng = d.rng
    choice = rng.randrange(4)
    if choice == 0:
        return [rng.choice(indices)]
    if choice == 1:
        return rng.sample(indices, min(len(indices), rng.randint(2, 10)))
    if choice == 2:
        return [i for i in indices if rng.random() < 0.3]
    return indices


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _by_start(d: Damage, indices: list[int]) -> list[int]:
    return sorted((i for i in indices if _number(d.events[i].get("ts"))), key=_start_of(d))


def _start_of(d: Damage) -> Callable[[int], float]:
    return lambda i: d.events[i]["ts"]


# --- timing -----------------------------------------------------------------------------------


def zero_length(d: Damage) -> None:
    """GPU events (now and then host calls too) with `"dur": 0`."""
    cats = GPU if d.rng.random() < 0.8 else (*GPU, "cuda_runtime", "cpu_op")
    for i in _some(d, _of(d, cats)):
        d.event(i)["dur"] = 0


def equal_times(d: Damage) -> None:
    """GPU events that start together, touch, or are copies of each other's timing."""
    rng = d.rng
    order = _by_start(d, _of(d, GPU))
    if len(order) < 2:
        return
    k = rng.randrange(len(order) - 1)
    a, b = d.event(order[k]), d.event(order[k + 1])
    choice = rng.randrange(4)
    if choice == 0:  # start together (another stream, or the same one)
        b["ts"] = a["ts"]
    elif choice == 1 and _number(a.get("dur")):  # b starts where a ends
        b["ts"] = a["ts"] + a["dur"]
    elif choice == 2:  # the same start and length
        b["ts"], b["dur"] = a["ts"], a.get("dur", 0)
    else:  # a run of events all starting at once, some of no length
        for i in order[k : k + rng.randint(2, 12)]:
            event = d.event(i)
            event["ts"] = a["ts"]
            if rng.random() < 0.5:
                event["dur"] = 0


def whole_microseconds(d: Damage) -> None:
    """Every time rounded down to a whole microsecond, as the 2021 profiler wrote them."""
    for i, event in enumerate(d.events):
        if isinstance(event, dict) and (_number(event.get("ts")) or _number(event.get("dur"))):
            event = d.event(i)
            for key in ("ts", "dur"):
                if _number(event.get(key)):
                    event[key] = math.floor(event[key])


def kernel_field(d: Damage) -> None:
    """One field of one GPU event changed to another plausible value."""
    rng = d.rng
    gpu = _of(d, GPU)
    if not gpu:
        return
    event = d.event(rng.choice(gpu))
    other = d.events[rng.choice(gpu)]
    field = rng.choice(["dur", "ts", "correlation", "stream", "device"])
    if field in ("dur", "ts"):
        event[field] = _time_value(d, event, other, field)
        return
    args = event.get("args")
    if not isinstance(args, dict):
        event["args"] = args = {}
    value = _arg_value(d, other, field)
    if value is _DELETE:
        args.pop(field, None)
    else:
        args[field] = value


_DELETE = object()


def _time_value(d: Damage, event: dict, other: dict, key: str) -> Any:
    value = event.get(key)
    base = value if _number(value) else 0
    if key == "dur":
        choices = [0, 1e-3, 1e-9, base * 1000, other.get("dur", 0), base + 0.5, 1e6]
    else:
        choices = [base + 0.5, base - 0.5, other.get("ts", base), base - 1e6, base + 1e3,
                   math.floor(base)]  # fmt: skip
    return d.rng.choice(choices)


def _arg_value(d: Damage, other: dict, key: str) -> Any:
    rng = d.rng
    theirs = other.get("args", {}).get(key) if isinstance(other.get("args"), dict) else None
    if key == "correlation":
        choices = [theirs, 0, -1, _DELETE, str(theirs), (theirs or 0) + 10**9, 2**63]
    elif key == "stream":
        choices = [theirs, 7, 13, "stream 7", _DELETE, -1, 2**40]
    else:
        choices = [theirs, 1, 7, -1, "0", _DELETE, 2**31]
    return rng.choice(choices)


# --- layout -----------------------------------------------------------------------------------


def old_categories(d: Damage, *, everywhere: bool | None = None) -> None:
    """The 2021 category names, on every event or on some (a trace mixing both spellings)."""
    rng = d.rng
    everywhere = rng.random() < 0.6 if everywhere is None else everywhere
    flows = rng.random() < 0.5  # flows become 2021's `async` ones: all or none of them
    indices = _of(d, (*OLD_NAMES, "ac2g"))
    for i in indices if everywhere else _some(d, indices):
        event = d.event(i)
        if event["cat"] != "ac2g":
            event["cat"] = OLD_NAMES[event["cat"]]
        elif everywhere and flows:
            event.update(FLOW_2021)


def string_tids(d: Damage, *, everywhere: bool | None = None) -> None:
    """Thread ids as text: "stream N" on the GPU, the number as a string on the host; flow
    starts keep the number, as in 2021 traces. On every event or on one side only."""
    rng = d.rng
    side = "both" if everywhere or rng.random() < 0.5 else rng.choice(["gpu", "host"])
    gpu_pids = {e.get("pid") for e in d.events if isinstance(e, dict) and e.get("cat") in GPU}
    for i, event in enumerate(d.events):
        if not isinstance(event, dict) or not _number(event.get("tid")):
            continue
        on_gpu = event.get("pid") in gpu_pids
        if side != "both" and on_gpu != (side == "gpu"):
            continue
        if event.get("ph") == "s":
            continue
        tid = int(event["tid"])
        d.event(i)["tid"] = f"stream {tid}" if on_gpu else str(tid)


def format_2021(d: Damage) -> None:
    """The whole 2021 layout: old names, async flows, text thread ids, whole microseconds,
    `external id` in lower case on runtime calls and GPU events."""
    old_categories(d, everywhere=True)
    string_tids(d, everywhere=True)
    whole_microseconds(d)
    for i in _of(d, ("Runtime", "Driver", "Kernel", "Memcpy", "Memset")):
        args = d.event(i).get("args")
        if isinstance(args, dict) and "External id" in args:
            args["external id"] = args.pop("External id")


def orphans(d: Damage) -> None:
    """No flows at all, or launch calls without their GPU event, or GPU events alone."""
    rng = d.rng
    choice = rng.randrange(3)
    if choice == 0:
        gone = set(_of(d, ("ac2g",)))
    elif choice == 1:
        gone = set(_some(d, _of(d, ("cuda_runtime", "cuda_driver"))))
    else:
        gone = set(_some(d, _of(d, GPU)))
    if gone:
        d.events[:] = [e for i, e in enumerate(d.events) if i not in gone] or [{}]
        d._owned.clear()  # positions moved: copy again before changing


def reorder(d: Damage) -> None:
    """The same events in another order: shuffled, reversed, or sorted by start time."""
    events, rng = d.events, d.rng
    choice = rng.randrange(3)
    if choice == 0:
        rng.shuffle(events)
    elif choice == 1:
        events.reverse()
    else:
        events.sort(key=lambda e: e["ts"] if isinstance(e, dict) and _number(e.get("ts")) else 0)
    d._owned.clear()  # positions moved: copy again before changing


LAYOUT_MUTATIONS: tuple[Callable[[Damage], None], ...] = (
    zero_length, equal_times, whole_microseconds, kernel_field, old_categories, string_tids,
    format_2021, orphans, reorder,
)  # fmt: skip
