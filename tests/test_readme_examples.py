"""The README's examples run as written: its MCP client configs start a server that answers the
handshake, its shell and Python blocks run, and the wheel `uvx --from` installs holds the whole
package. (The report excerpt of "What a report says" is checked by
tests/generated/test_readme_report.py.)

- Every JSON block of "The MCP server" is a client config: it parses, names `rooflens serve`
  (directly, or through `uvx --from <the clone or a wheel built from it>`), and that command,
  run from this environment's entry point with the placeholder folders made real, completes
  an MCP `initialize` handshake over stdio and lists the tools.
- Every shell block's `rooflens` and `python -c` commands run (in bash, in a fresh folder
  holding `path/to/trace.json.gz`, HOME there too) and exit 0; `pip`, `pytest`, benchmarks,
  devkit and `rooflens serve` (a server, checked above) are left out. Every Python block runs.
- `python -m build` on the tracked files (a fresh clone) gives a wheel and an sdist that
  `twine check` passes, and the wheel holds every tracked file of the package's folders:
  each module and the data it reads (prompts, category table, platform catalogue).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from rooflens.analyzers.synthetic.sample import write_sample_trace
from tests.helpers.tracked import tracked_files

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
ENTRY_POINT = Path(sys.executable).parent / "rooflens"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.DOTALL | re.MULTILINE)
PLACEHOLDER_DIRS = ("/abs/path/to/traces", "${workspaceFolder}")
CLONE = "/abs/path/to/rooflens"
WHEEL = re.compile(r"^/abs/path/to/rooflens/dist/rooflens-(?P<version>[^-]+)-py3-none-any\.whl$")
SKIPPED = re.compile(r"^(pip |pytest|python benchmarks/|python -m devkit|rooflens serve)")
# where each of the package's folders goes in the wheel (pyproject's package-dir)
PACKAGE_DIRS = {
    "entry": "rooflens",
    "cli": "rooflens/cli",
    "server": "rooflens/server",
    "resources": "rooflens/resources",
    "prompts": "rooflens/prompts",
    "analyzers": "rooflens/analyzers",
}


def blocks(language: str, section: str | None = None) -> list[str]:
    """The README's fenced blocks of one language (in one `## section` when given)."""
    text = README.read_text(encoding="utf-8")
    if section is not None:
        text = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [body for lang, body in BLOCK.findall(text) if lang == language]


def shell_commands(block: str) -> list[str]:
    """The block's commands (continuation lines joined, comments dropped) that a test runs."""
    joined = block.replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        command = line.split("  #", 1)[0].strip()
        if command and not command.startswith("#") and not SKIPPED.match(command):
            commands.append(command)
    return commands


# -- the client configs ----------------------------------------------------------------------


def configs() -> list[dict]:
    found = [json.loads(body) for body in blocks("json", "The MCP server")]
    assert len(found) >= 4, "the client configs were not found"
    return [c["mcpServers"]["rooflens"] for c in found]


def serve_arguments(config: dict) -> list[str]:
    """The arguments after `rooflens`, checking how the config names the program."""
    command, args = config["command"], list(config["args"])
    if command == "uvx":
        assert args[0] == "--from" and args[2] == "rooflens", args
        source = args[1]
        assert source == CLONE or WHEEL.match(source), f"uvx installs from {source}"
        match = WHEEL.match(source)
        if match:
            import rooflens

            assert match["version"] == rooflens.__version__, "the README names another wheel"
        return args[3:]
    assert Path(command).name == "rooflens" and Path(command).is_absolute(), command
    return args


async def _handshake(arguments: list[str]) -> tuple[str, int]:
    params = StdioServerParameters(command=str(ENTRY_POINT), args=arguments)
    with anyio.fail_after(60):
        async with Client(stdio_client(params)) as client:
            info = client.server_info
            tools = await client.list_tools()
    assert info is not None
    return info.name, len(tools.tools)


def test_client_configs_parse_and_name_rooflens_serve() -> None:
    kinds = set()
    for config in configs():
        arguments = serve_arguments(config)
        assert arguments[0] == "serve" and "--allow-dir" in arguments
        kinds.add(config["command"] if config["command"] == "uvx" else "path")
        if config["command"] == "uvx":
            kinds.add("wheel" if WHEEL.match(config["args"][1]) else "clone")
    assert kinds == {"uvx", "path", "wheel", "clone"}


@pytest.mark.slow
def test_each_client_config_starts_a_server_that_answers_the_handshake(tmp_path: Path) -> None:
    assert ENTRY_POINT.is_file(), "rooflens is not installed in this environment"
    for index, config in enumerate(configs()):
        allowed = tmp_path / f"traces{index}"
        allowed.mkdir()
        arguments = [str(allowed) if a in PLACEHOLDER_DIRS else a for a in serve_arguments(config)]
        name, tools = anyio.run(_handshake, arguments)
        assert name == "rooflens" and tools > 10, config


@pytest.mark.slow
def test_uvx_runs_rooflens_from_this_clone(tmp_path: Path) -> None:
    """What the clone config's `uvx --from` does (it resolves the dependencies from the
    package index into uv's cache; uv is in the test extras, about 4 s with an empty cache)."""
    uvx = Path(sys.executable).parent / "uvx"
    assert uvx.is_file(), "uv is in the test extras: pip install -e '.[test]'"
    done = subprocess.run(
        [str(uvx), "--from", str(ROOT), "rooflens", "--version"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    import rooflens

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"rooflens {rooflens.__version__}"


# -- the shell and Python examples -----------------------------------------------------------


def _example_folder(root: Path) -> tuple[Path, dict[str, str]]:
    """A fresh folder with the README's `path/to/trace.json.gz`, and the environment."""
    root.mkdir(parents=True)
    write_sample_trace(root / "path" / "to" / "trace.json.gz")
    (root / ".local/share/bash-completion/completions").mkdir(parents=True)
    (root / ".zfunc").mkdir()
    (root / "rooflens.toml").write_text("")  # a config of its own: none from above is used
    env = {**os.environ, "HOME": str(root), "PATH": f"{ENTRY_POINT.parent}:{os.environ['PATH']}"}
    return root, env


def test_the_readme_has_shell_and_python_examples() -> None:
    commands = [c for b in blocks("bash") for c in shell_commands(b)]
    assert sum(c.startswith("rooflens ") for c in commands) >= 6, commands
    assert any(c.startswith("python -c") for c in commands)
    assert blocks("python")


@pytest.mark.slow
def test_the_readme_shell_examples_run(tmp_path: Path) -> None:
    ran, folders = 0, {}
    for index, block in enumerate(blocks("bash")):
        commands = shell_commands(block)
        if not commands:
            continue
        folder, env = _example_folder(tmp_path / f"block{index}")
        folders.update({command: folder for command in commands})
        for command in commands:
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", command],
                cwd=folder,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr}"
            assert "Traceback" not in done.stderr, command
            ran += 1
    assert ran >= 7
    # what they wrote: the completion scripts and the runs where the README says
    home = next(f for c, f in folders.items() if c.startswith("rooflens completion bash"))
    assert "rooflens" in (home / ".local/share/bash-completion/completions/rooflens").read_text()
    assert (home / ".zfunc/_rooflens").read_text().startswith("#compdef rooflens")
    assert (home / "run" / "run.json").is_file()


@pytest.mark.slow
def test_the_readme_python_examples_run(tmp_path: Path) -> None:
    for index, block in enumerate(blocks("python")):
        folder, env = _example_folder(tmp_path / f"block{index}")
        done = subprocess.run(
            [sys.executable, "-c", block],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"{block}\n{done.stderr}"
        assert done.stdout.strip(), "the example prints the top priority's title"


# -- the wheel -------------------------------------------------------------------------------


def expected_wheel_files(tracked: list[str]) -> set[str]:
    """Where every tracked file of the package's folders lands in the wheel."""
    expected = set()
    for name in tracked:
        top, _, rest = name.partition("/")
        if top in PACKAGE_DIRS and rest:
            expected.add(f"{PACKAGE_DIRS[top]}/{rest}")
    return expected


def test_expected_wheel_files_maps_the_package_folders() -> None:
    got = expected_wheel_files(["cli/main.py", "prompts/gemm.md", "tests/x.py", "README.md"])
    assert got == {"rooflens/cli/main.py", "rooflens/prompts/gemm.md"}


@pytest.mark.slow
def test_the_built_wheel_holds_the_whole_package_and_twine_passes(tmp_path: Path) -> None:
    tracked = [p.relative_to(ROOT).as_posix() for p in tracked_files(ROOT)]
    clone = tmp_path / "clone"
    for name in tracked:  # a fresh clone: nothing untracked or built can slip in
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, clone / name)
    dist = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(clone)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    assert "Package would be ignored" not in built.stdout + built.stderr
    wheels, sdists = list(dist.glob("*.whl")), list(dist.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, wheels + sdists)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = {n for n in wheel.namelist() if not n.startswith("rooflens-")}
        entry_points = wheel.read(
            next(n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt"))
        ).decode()
    expected = expected_wheel_files(tracked)
    assert names == expected, (
        f"missing from the wheel: {sorted(expected - names)[:10]}; "
        f"not tracked: {sorted(names - expected)[:10]}"
    )
    for data in ("rooflens/prompts/orchestrator.md", "rooflens/analyzers/perf/categories.toml"):
        assert data in names
    assert sum(n.startswith("rooflens/analyzers/perf/platforms/") for n in names) >= 20
    assert "rooflens = rooflens.__main__:run" in entry_points


def test_the_readme_config_file_example_is_accepted(tmp_path: Path, monkeypatch, capsys) -> None:
    from rooflens.cli.main import main

    (example,) = blocks("toml")
    (tmp_path / "rooflens.toml").write_text(example)
    monkeypatch.chdir(tmp_path)
    assert main(["config", "--json"]) == 0
    shown = {row["key"]: row for row in json.loads(capsys.readouterr().out)["options"]}
    assert shown["platform"]["value"] == "MI300X"
    assert shown["out"]["value"] == str(tmp_path / "runs")
    assert shown["categories"]["value"] == str(tmp_path / "ops/our_categories.toml")
    assert shown["format"]["source"] == str(tmp_path / "rooflens.toml")
