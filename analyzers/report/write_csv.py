"""Write report sheets as a folder of CSV files, atomically, with JSON in structured cells."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd

from .csv_cells import (
    ESCAPED,
    CsvCells,
    escape_frame,
    holds_carriage_return,
)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    return str(value)


def cell_text(value: Any) -> Any:
    """Lists and dicts become JSON text; everything else is left for the CSV writer."""
    if isinstance(value, list | dict | tuple):
        return json.dumps(value, default=_json_default, separators=(", ", ": "))
    return value


def for_output(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy whose structured cells are JSON text (object columns only are touched)."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object:
            out[column] = out[column].map(cell_text)
    return out


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, then rename over the target."""
    with atomic_file(path) as f:
        f.write(data)


@contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """A temporary file in the same folder to write (streamed), renamed over `path` when the
    block ends without an error; removed otherwise."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; artifacts get the usual mode
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def table_csv(frame: pd.DataFrame, cells: CsvCells = ESCAPED, *, rendered: bool = False) -> str:
    """The CSV text of a table, as every CSV rooflens writes is made: structured cells as JSON,
    text cells escaped against spreadsheet formulas unless `cells` is RAW, a cell holding a
    carriage return quoted (csv_cells.py). `rendered`: `frame` is already `for_output`'s."""
    table = frame if rendered else for_output(frame)
    if cells == ESCAPED:
        table = escape_frame(table)
    return table.to_csv(
        index=False, lineterminator="\r\n" if holds_carriage_return(table) else "\n"
    )


def write_csv_folder(
    sheets: Mapping[str, pd.DataFrame],
    folder: Path,
    *,
    rendered: bool = False,
    cells: CsvCells = ESCAPED,
) -> list[Path]:
    """One `<sheet>.csv` per sheet (`table_csv`); returns the paths written."""
    written = []
    for name, frame in sheets.items():
        path = folder / f"{name}.csv"
        atomic_write_bytes(path, table_csv(frame, cells, rendered=rendered).encode("utf-8"))
        written.append(path)
    return written
