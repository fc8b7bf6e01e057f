"""Everything a model reads over the orchestrator recipe fits one result: every tool result,
resource page and prompt of a whole analysis of the sample trace (devkit/surface.py) is at
most 16,384 bytes (the server's default limit), and tools/list at most 25 KB. Only the
explicit downloads of a whole binary (`?full=1`, the workbook) are larger."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from devkit.surface import EXPLICIT_DOWNLOADS, run_recipe
from rooflens.server.app import ServerConfig, build_server
from rooflens.server.settings import DEFAULT_MAX_RESULT_BYTES


@pytest.mark.anyio
async def test_every_answer_of_the_orchestrator_recipe_fits_one_result(sample: Path) -> None:
    with anyio.fail_after(120):
        async with Client(build_server(ServerConfig(allowed_dirs=[sample.parent]))) as client:
            sizes = await run_recipe(client, sample)
    answers = sizes.tools + sizes.bounded() + sizes.prompts
    assert [a for a in answers if a[1] > DEFAULT_MAX_RESULT_BYTES] == []
    assert sizes.tools_list <= 25 * 1024
    read = [uri for uri, _ in sizes.resources]
    assert any("/report?section=" in uri for uri in read)  # the report came in sections
    assert any("/priorities?list=" in uri for uri in read)  # and the priorities in pages
    downloads = [a for a in sizes.resources if a[0].endswith(EXPLICIT_DOWNLOADS)]
    assert any(size > DEFAULT_MAX_RESULT_BYTES for _, size in downloads)  # the full plot
    assert len(sizes.tools) >= 25 and len(read) >= 30 and len(sizes.prompts) >= 15
