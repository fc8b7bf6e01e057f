"""Every input file opened one way (analyzers/trace/input_file.py): regular files only, side
files within their size limit; a FIFO in any role is refused without blocking."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from rooflens.analyzers.perf.categories import CategoryFileError, load_table
from rooflens.analyzers.perf.platforms import PlatformFileError, load_platform_file
from rooflens.analyzers.trace.capture import DETAILS_FILE
from rooflens.analyzers.trace.capture_folder import load_captures
from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.input_file import InputFileError, read_side_file
from rooflens.analyzers.trace.read import read_trace_bytes
from tests.helpers.fifo import released_after

FIFO = r"is a FIFO \(named pipe\), not a regular file"


def capture_folder_with_fifo_details(tmp_path: Path) -> Path:
    folder = tmp_path / "capture_traces"
    folder.mkdir()
    (folder / "capture_0.json").write_text('{"traceEvents": []}')
    os.mkfifo(folder / DETAILS_FILE)
    return folder


ROLES = {  # role -> (the FIFO's name, how the engine reads it, the error it raises)
    "platform file": ("gpu.json", load_platform_file, PlatformFileError),
    "category table": ("cats.toml", load_table, CategoryFileError),
    "trace": ("trace.json", read_trace_bytes, TraceError),
}


@pytest.mark.parametrize("role", list(ROLES))
def test_a_fifo_in_any_role_is_refused_without_blocking(tmp_path: Path, role: str) -> None:
    name, read, error = ROLES[role]
    fifo = tmp_path / name
    os.mkfifo(fifo)
    with released_after(fifo) as dog, pytest.raises(error, match=f"{name}: {FIFO}"):
        read(fifo)
    assert not dog.fired  # nobody ever waited on the FIFO


def test_a_fifo_capture_sidecar_is_refused_without_blocking(tmp_path: Path) -> None:
    folder = capture_folder_with_fifo_details(tmp_path)
    refused = pytest.raises(TraceError, match=f"{DETAILS_FILE}: {FIFO}")
    with released_after(folder / DETAILS_FILE) as dog, refused:
        load_captures(folder)
    assert not dog.fired


def test_a_side_file_is_read_whole_when_regular_and_small(tmp_path: Path) -> None:
    path = tmp_path / "gpu.json"
    path.write_bytes(b'{"name": "X"}')
    assert read_side_file(path, "platform file") == b'{"name": "X"}'
    with pytest.raises(InputFileError, match="is 13 bytes, more than the 10 a platform file may"):
        read_side_file(path, "platform file", limit=10)
    with pytest.raises(InputFileError, match="is a folder, not a platform file"):
        read_side_file(tmp_path, "platform file")
    with pytest.raises(InputFileError, match=r"nope\.json: file not found"):
        read_side_file(tmp_path / "nope.json", "platform file")


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="no /dev/null")
def test_a_device_behind_a_link_is_refused_by_kind(tmp_path: Path) -> None:
    (tmp_path / "cats.toml").symlink_to("/dev/null")  # harmless to read, but not a file
    with pytest.raises(CategoryFileError, match="is a character device, not a regular file"):
        load_table(tmp_path / "cats.toml")


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="no unix sockets")
def test_a_socket_is_refused_by_kind(tmp_path: Path) -> None:
    path = tmp_path / "gpu.json"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises(PlatformFileError, match="is a socket, not a regular file"):
            load_platform_file(path)
