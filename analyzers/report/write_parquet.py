"""Write report sheets as Parquet files (`--format parquet`), for pandas, polars or DuckDB.

The CSVs stay the report's contract (TraceLens's consumers, the validators, the MCP table
resources read them); Parquet is the same tables with their types kept: numbers stay numbers,
structured cells are the CSV's JSON text, and text is written as it is (no spreadsheet opens
a Parquet file, so nothing is escaped against formulas). A column that mixes text with
numbers is written as text. pyarrow is the optional `parquet` extra, imported only here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from .write_csv import atomic_write_bytes, for_output

EXTRA_HINT = "pip install 'rooflens[parquet]' (or pip install pyarrow)"


class ParquetUnavailable(ImportError):
    """pyarrow is not installed; the message says how to install the extra."""


def require_pyarrow() -> Any:
    """The pyarrow module, or ParquetUnavailable naming the extra to install."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ParquetUnavailable(
            f"--format parquet needs pyarrow, which is not installed: {EXTRA_HINT}"
        ) from None
    return pyarrow


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def arrow_table(frame: pd.DataFrame) -> Any:
    """A sheet as an Arrow table: `for_output`'s cells, mixed object columns as text."""
    pa = require_pyarrow()
    table = for_output(frame)
    for column in table.columns:
        if table[column].dtype != object:
            continue
        try:
            pa.array(table[column], from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            table[column] = table[column].map(lambda v: None if _missing(v) else str(v))
    return pa.Table.from_pandas(table, preserve_index=False)


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    pa = require_pyarrow()
    sink = pa.BufferOutputStream()
    pa.parquet.write_table(arrow_table(frame), sink)
    return sink.getvalue().to_pybytes()


def write_parquet_folder(sheets: Mapping[str, pd.DataFrame], folder: Path) -> list[Path]:
    """One `<sheet>.parquet` per sheet, each written atomically; the paths written."""
    written = []
    for name, frame in sheets.items():
        path = folder / f"{name}.parquet"
        atomic_write_bytes(path, parquet_bytes(frame))
        written.append(path)
    return written
