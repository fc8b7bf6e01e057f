"""The size of what a model reads: every tool result, resource and prompt of the orchestrator
recipe, and `tools/list`, in bytes.

The server is driven in this process by the SDK's in-memory client (devkit/surface.py): the
orchestrator recipe on (a) the sample trace `rooflens demo` analyses and (b) a generated job
of `--ranks` ranks in lockstep with one slow rank (analyzers/synthetic/what_if_job.py), its
straggler's run analysed in full. Every answer is printed with its size; the summary line
gives the largest tool result, the largest resource read by default (explicit downloads of a
whole binary, `?full=1`, are listed apart) and `tools/list`, against the server's limit.

Run:  python benchmarks/surface_sizes.py [--ranks 4] [--workdir DIR] [--json-out F] [--quiet]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import anyio
from mcp import Client

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for devkit (not installed with the package)

from devkit.surface import Sizes, job_recipe, run_recipe  # noqa: E402
from rooflens.analyzers.synthetic.sample import write_sample_trace  # noqa: E402
from rooflens.analyzers.synthetic.what_if_job import LockstepPlan, write_lockstep_job  # noqa: E402
from rooflens.server.app import ServerConfig, build_server  # noqa: E402
from rooflens.server.settings import DEFAULT_MAX_RESULT_BYTES  # noqa: E402

TOOLS_LIST_LIMIT = 25 * 1024


def show(name: str, sizes: Sizes, quiet: bool) -> dict:
    if not quiet:
        for kind, rows in (("tool", sizes.tools), ("resource", sizes.resources)):
            for what, size in rows:
                print(f"  {kind:8} {size:8,d}  {what}")
        for what, size in sizes.prompts:
            print(f"  prompt   {size:8,d}  {what}")
    tool, resource = Sizes.largest(sizes.tools), Sizes.largest(sizes.bounded())
    explicit = [r for r in sizes.resources if r not in sizes.bounded()]
    print(
        f"{name}: largest tool result {tool[1]:,d} B ({tool[0]}); largest resource page "
        f"{resource[1]:,d} B ({resource[0]}); tools/list {sizes.tools_list:,d} B; "
        f"limit {DEFAULT_MAX_RESULT_BYTES:,d} B per answer, {TOOLS_LIST_LIMIT:,d} B tools/list"
    )
    for what, size in explicit:
        print(f"  explicit download {size:,d} B: {what}")
    return {
        "largest_tool": tool,
        "largest_resource": resource,
        "tools_list": sizes.tools_list,
        "tools": sizes.tools,
        "resources": sizes.resources,
        "prompts": sizes.prompts,
    }


async def measure(workdir: Path, ranks: int, quiet: bool) -> dict:
    sample = write_sample_trace(workdir / "sample_step.json.gz")
    job = write_lockstep_job(
        workdir / "job", LockstepPlan(ranks=ranks, steps=6, slow_rank=1, slow_factor=1.6)
    )
    out = {}
    async with Client(build_server(ServerConfig(allowed_dirs=[workdir]))) as client:
        out["sample"] = show("sample trace", await run_recipe(client, sample), quiet)
        sizes = await job_recipe(client, job)
        out["job"] = show(f"generated job of {ranks} ranks", sizes, quiet)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--quiet", action="store_true", help="the summary lines only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = (args.workdir or Path(tmp)).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        figures = anyio.run(measure, workdir, args.ranks, args.quiet)
    if args.json_out:
        args.json_out.write_text(json.dumps(figures, indent=1))
    over = [
        (name, f)
        for name, f in figures.items()
        if max(f["largest_tool"][1], f["largest_resource"][1]) > DEFAULT_MAX_RESULT_BYTES
        or f["tools_list"] > TOOLS_LIST_LIMIT
    ]
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
