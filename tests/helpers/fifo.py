"""FIFOs for the tests that prove an input file is refused instead of read: opening a FIFO for
reading blocks until a writer comes, so a regression would hang the test. `released_after`
plays the writer once a deadline has passed, which lets a blocked reader go (it then reads
nothing), and says whether it had to: the test fails instead of hanging.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DEADLINE_S = 10.0  # a refusal takes milliseconds; a reader still blocked after this is stuck


class Watchdog:
    """Whether the watchdog had to release a reader (`fired`: the code under test blocked)."""

    def __init__(self) -> None:
        self.fired = False


def release(path: Path) -> bool:
    """Open the FIFO for writing without blocking and close it: a reader blocked in open()
    goes on (to end of file). False when no reader was waiting."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # ENXIO: nobody has it open for reading
        return False
    os.close(fd)
    return True


@contextmanager
def released_after(fifo: Path, seconds: float = DEADLINE_S) -> Iterator[Watchdog]:
    """Run the block; past `seconds`, release whoever waits on `fifo` (again and again, for a
    reader that opens it twice) and mark the watchdog fired."""
    dog, stop = Watchdog(), threading.Event()

    def watch() -> None:
        if stop.wait(seconds):
            return
        while not stop.wait(0.05):
            dog.fired |= release(fifo)

    thread = threading.Thread(target=watch, daemon=True, name="fifo-watchdog")
    thread.start()
    try:
        yield dog
    finally:
        stop.set()
        thread.join()
