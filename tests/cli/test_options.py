"""What every command shares: -v/--log-level, the config file, shell completion, Parquet.

Each bad input is one line on stderr and exit 2, never a traceback.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rooflens.analyzers.synthetic.sample import write_sample_trace
from rooflens.cli import config, config_defaults
from rooflens.cli.main import build_parser, main


@pytest.fixture(autouse=True)
def _restore_logging():
    """main() sets the root logger up; put it back as pytest had it."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield
    root.setLevel(level)
    root.handlers[:] = handlers


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder (a rooflens.toml may be planted) and, inside it, the current folder."""
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    monkeypatch.chdir(project / "sub")
    return project


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_sample_trace(tmp_path_factory.mktemp("trace") / "step_one.json.gz")


def parse(argv: list[str]):
    """The namespace `main` would dispatch: the config file's values in as defaults."""
    found = config.load()
    parser = build_parser()
    config_defaults.install(parser, found)
    args = parser.parse_args(argv)
    config_defaults.resolve(parser, args, found)
    return args


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    return err


# -- logging -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "level"),
    [
        (["platforms"], logging.WARNING),
        (["-v", "platforms"], logging.INFO),
        (["platforms", "--verbose"], logging.INFO),
        (["platforms", "-vv"], logging.DEBUG),
        (["-v", "platforms", "--log-level", "error"], logging.ERROR),
    ],
)
def test_verbosity_sets_the_root_level_for_any_command(folder, capsys, argv, level) -> None:
    assert main(argv) == 0
    assert logging.getLogger().level == level
    assert "MI300X" in capsys.readouterr().out


def test_the_log_level_from_the_file_gives_way_to_the_command_line(folder, capsys) -> None:
    (folder / "rooflens.toml").write_text('log-level = "debug"\n')
    assert main(["platforms"]) == 0
    assert logging.getLogger().level == logging.DEBUG
    assert main(["-v", "platforms"]) == 0
    assert logging.getLogger().level == logging.INFO


def test_a_bad_log_level_is_one_line(folder, capsys) -> None:
    assert main(["--log-level", "loud", "platforms"]) == 2
    assert "unknown log level 'loud': use one of DEBUG, INFO" in one_line_error(capsys)


# -- the config file ---------------------------------------------------------------------


def test_the_nearest_file_is_found_and_its_paths_are_its_own(folder) -> None:
    (folder / "pyproject.toml").write_text('[tool.rooflens]\nplatform = "H100_SXM"\n')
    (folder.parent / "rooflens.toml").write_text('platform = "MI300X"\n')
    found = config.load()
    assert found.path == folder / "pyproject.toml"
    assert found.values == {"platform": "H100_SXM"}
    # in one folder rooflens.toml comes first; relative paths are the file's
    (folder / "rooflens.toml").write_text('categories = "ops/extra.toml"\nallow-dir = "traces"\n')
    found = config.load()
    assert found.path == folder / "rooflens.toml"
    assert found.values == {
        "categories": str(folder / "ops/extra.toml"),
        "allow-dir": [str(folder / "traces")],
    }


def test_a_pyproject_without_the_table_is_passed_over(folder) -> None:
    (folder / "pyproject.toml").write_text('[project]\nname = "other"\n')
    (folder.parent / "rooflens.toml").write_text('platform = "MI300X"\n')
    assert config.load().path == folder.parent / "rooflens.toml"
    assert config.load(no_config=True).path is None
    explicit = folder / "team.toml"
    explicit.write_text("gate = 5\n")
    assert config.load(str(explicit)).values == {"gate": 5.0}


def test_flags_win_over_the_file_and_drop_its_exclusive_partner(folder, sample) -> None:
    (folder / "rooflens.toml").write_text(
        'platform = "MI300X"\nout = "runs"\nformat = "parquet"\ngate = 2.5\nraw-csv = true\n'
    )
    args = parse(["analyze", str(sample)])
    assert (args.platform, args.platform_file, args.format, args.raw_csv) == (
        "MI300X",
        None,
        "parquet",
        True,
    )
    assert args.out == str(folder / "runs" / "step_one")
    args = parse(["analyze", str(sample), "--platform", "H100_SXM", "--format", "csv"])
    assert (args.platform, args.format) == ("H100_SXM", "csv")
    args = parse(["report", str(sample), "--platform-file", "p.json", "--out", "here"])
    assert (args.platform, args.platform_file, args.out) == (None, "p.json", "here")
    args = parse(["compare", str(sample), "other.json"])
    assert (args.gate, args.out) == (2.5, str(folder / "runs" / "step_one-vs-other"))
    args = parse(["inspect", str(sample)])  # a command without the options is untouched
    assert not hasattr(args, "platform") and not hasattr(args, "out")


def test_serve_takes_allowed_folders_from_the_file_unless_flags_give_them(folder) -> None:
    (folder / "rooflens.toml").write_text('allow-dir = ["a", "b"]\nmax-result-kb = 32\n')
    args = parse(["serve"])
    assert args.allow_dir == [str(folder / "a"), str(folder / "b")]
    assert args.max_result_kb == 32
    assert parse(["serve", "--allow-dir", "c"]).allow_dir == ["c"]


def test_the_file_sets_a_run_the_cli_writes(folder, sample, capsys) -> None:
    (folder / "rooflens.toml").write_text('platform = "H100_SXM"\nout = "runs"\n')
    assert main(["report", str(sample)]) == 0
    record = json.loads((folder / "runs" / "step_one" / "run.json").read_text())
    assert record["platform"] == "H100_SXM"
    assert "Scored against platform H100_SXM" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("platfrom = 'MI300X'\n", "unknown key 'platfrom' (did you mean 'platform'?)"),
        ("platform = \n", "not valid TOML: Invalid value (at line 1, column 12)"),
        ("gate = 'five'\n", "'gate' must be a number, not 'five'"),
        ("workers = true\n", "'workers' must be an integer, not True"),
        ("allow-dir = [1]\n", "'allow-dir' must be a string or a list of strings"),
        ("format = 'xlsx'\n", "'format' must be one of csv, parquet"),
        ("log-level = 'loud'\n", "unknown log level 'loud'"),
        ("[serve]\nport = 1\n", "unknown key 'serve'"),
    ],
)
def test_a_bad_file_is_one_line_naming_it(folder, capsys, text: str, message: str) -> None:
    (folder / "rooflens.toml").write_text(text)
    assert main(["platforms"]) == 2
    err = one_line_error(capsys)
    assert str(folder / "rooflens.toml") in err and message in err


def test_a_missing_config_file_is_one_line(folder, capsys) -> None:
    assert main(["--config", "nowhere.toml", "platforms"]) == 2
    assert "nowhere.toml: not found" in one_line_error(capsys)


def test_config_prints_each_value_and_its_source(folder, capsys) -> None:
    (folder / "pyproject.toml").write_text('[tool.rooflens]\nplatform = "MI300X"\n')
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert f"Config file: {folder / 'pyproject.toml'}" in out
    assert f'platform       "MI300X"  ({folder / "pyproject.toml"})' in out
    assert "gate           -  (default)" in out
    assert main(["--log-level", "info", "config", "--json"]) == 0
    shown = {r["key"]: r for r in json.loads(capsys.readouterr().out)["options"]}
    assert shown["log-level"] == {**shown["log-level"], "value": "INFO", "source": "command line"}
    assert main(["--no-config", "config"]) == 0
    assert "Config file: none (--no-config)" in capsys.readouterr().out


# -- completion --------------------------------------------------------------------------


def _script(shell: str, capsys) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_the_bash_script_is_valid_and_completes_the_commands(tmp_path, capsys) -> None:
    script = tmp_path / "rooflens.bash"
    script.write_text(_script("bash", capsys))
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0

    def complete(*words: str) -> set[str]:
        line = " ".join(["rooflens", *words])
        probe = (
            f"source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words)}; "
            f'COMP_LINE="{line}"; COMP_POINT=${{#COMP_LINE}}; _shtab_rooflens; '
            'printf "%s\\n" "${COMPREPLY[@]}"'
        )
        done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return set(done.stdout.split())

    assert complete("an") == {"analyze", "analyze-job"}
    assert {"config", "completion", "compare"} <= complete("co")
    assert {"--platform", "--platform-file"} <= complete("analyze", "--plat")
    assert {"MI300X", "MI325X", "MI355X"} <= complete("report", "--platform", "MI3")


def test_the_zsh_script_defines_the_command(tmp_path, capsys) -> None:
    script = _script("zsh", capsys)
    assert script.startswith("#compdef rooflens")
    assert "analyze-job" in script and "--log-level" in script
    if shutil.which("zsh"):  # syntax, where zsh is installed
        (tmp_path / "_rooflens").write_text(script)
        checked = subprocess.run(["zsh", "-n", str(tmp_path / "_rooflens")], capture_output=True)
        assert checked.returncode == 0, checked.stderr


def test_an_unknown_shell_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["completion", "fish"])
    assert exited.value.code == 2
    assert "invalid choice: 'fish'" in capsys.readouterr().err


# -- parquet -----------------------------------------------------------------------------


def test_parquet_tables_read_back_as_the_csvs_say(tmp_path, sample, capsys) -> None:
    out = tmp_path / "run"
    assert main(["report", str(sample), "--format", "parquet", "--out", str(out)]) == 0
    assert "tables as Parquet" in capsys.readouterr().out
    csvs = sorted((out / "perf_report_csvs").glob("*.csv"))
    assert len(csvs) >= 6
    for csv in csvs:
        table = pd.read_parquet(out / "perf_report_parquet" / f"{csv.stem}.parquet")
        written = pd.read_csv(csv)
        assert list(table.columns) == list(written.columns)
        assert len(table) == len(written)
        for column in table.columns:
            numbers = written[column]
            if pd.api.types.is_numeric_dtype(numbers) and numbers.notna().any():
                assert pd.api.types.is_numeric_dtype(table[column]), (csv.stem, column)
                pd.testing.assert_series_equal(
                    table[column].astype(float), written[column].astype(float), rtol=1e-9
                )
    timeline = pd.read_parquet(out / "perf_report_parquet" / "gpu_timeline.parquet")
    assert timeline["type"].iloc[0] == "computation_time"
    assert timeline["percent"].sum() > 100  # computation + busy + idle + total rows
    assert main(["validate", str(out)]) == 2  # a report only: no category data to validate
    record = json.loads((out / "run.json").read_text())
    assert "perf_report_parquet/gpu_timeline.parquet" in record["artifacts"]


def test_a_comparison_writes_each_csv_folder_as_parquet(tmp_path, sample, capsys) -> None:
    out = tmp_path / "cmp"
    argv = ["compare", str(sample), str(sample), "--until", "prepared", "--out", str(out)]
    assert main([*argv, "--format", "parquet"]) == 0
    for folder in ("perf_report", "perf_report_trace1", "perf_report_trace2"):
        csvs = {p.stem for p in (out / f"{folder}_csvs").glob("*.csv")}
        assert {p.stem for p in (out / f"{folder}_parquet").glob("*.parquet")} == csvs
    diff = pd.read_parquet(out / "perf_report_trace1_parquet" / "diff_stats.parquet")
    assert list(diff.columns) == list(pd.read_csv(out / "perf_report_trace1_csvs/diff_stats.csv"))


def test_parquet_without_pyarrow_says_how_to_install_it(tmp_path, sample, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    out = tmp_path / "run"
    assert main(["report", str(sample), "--format", "parquet", "--out", str(out)]) == 2
    assert "pip install 'rooflens[parquet]'" in one_line_error(capsys)
    assert not out.exists()


@pytest.mark.slow
def test_a_job_writes_its_tables_as_parquet_too(tmp_path, capsys) -> None:
    from rooflens.analyzers import layout
    from rooflens.analyzers.job.job_folder import verify_job
    from rooflens.analyzers.synthetic.job import JobPlan, write_job

    write_job(tmp_path / "job", JobPlan(ranks=2, steps=2, collectives=2, slow_rank=1))
    out = tmp_path / "out"
    argv = ["analyze-job", str(tmp_path / "job"), "--out", str(out), "--workers", "1"]
    assert main([*argv, "--until", "none", "--format", "parquet"]) == 0
    csvs = sorted((out / layout.JOB_TABLES).glob("*.csv"))
    assert len(csvs) == 3
    for csv in csvs:
        table = pd.read_parquet(out / layout.JOB_PARQUET / f"{csv.stem}.parquet")
        assert table.shape == pd.read_csv(csv).shape
    ranks = pd.read_parquet(out / layout.JOB_PARQUET / "ranks.parquet")
    assert sorted(ranks["rank"]) == [0, 1]
    assert verify_job(out) == []  # the Parquet files are in the job's ledger
