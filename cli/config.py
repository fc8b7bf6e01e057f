"""The config file: options a team always passes (platform, categories, output, format, ...).

Where it is read from (the first found wins; docs/cli.md#config-file):

1. `--config FILE` (a `pyproject.toml` is read for its `[tool.rooflens]` table, any other file
   whole); `--no-config` reads none;
2. else from the current folder upward, in each folder: `rooflens.toml` (its top-level keys),
   then `pyproject.toml` if it has a `[tool.rooflens]` table (one without it is passed over).

A value from the file is only a default: a flag on the command line wins, and a flag of a
mutually exclusive pair (`--platform-file` against the file's `platform`) drops the file's
value. Relative paths in the file are relative to the file's folder. Unknown keys and values
of the wrong type are refused with the file's name; never a traceback. The values become the
parsers' defaults in `config_defaults.py`; `rooflens config` (`config_command.py`) prints
what is in force and where each value came from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from .common import fail
from .logging_setup import BadLevel, parse_level

FILE_NAME = "rooflens.toml"
PYPROJECT = "pyproject.toml"
RUN_COMMANDS = ("report", "analyze", "compare")  # `out` names a folder of their runs


class ConfigError(ValueError):
    """The config file cannot be used; the message names it and says why (one line)."""


class Key(NamedTuple):  # NamedTuples, not dataclasses: `rooflens --help` stays light
    """One key of the file: the option it stands for and the type its value must have."""

    name: str
    dest: str
    kind: type
    help: str
    path: bool = False  # a path (or list of paths): relative to the file's folder
    commands: tuple[str, ...] | None = None  # None: every command that has the option


KEYS = (
    Key("platform", "platform", str, "platform name (`rooflens platforms`)"),
    Key("platform-file", "platform_file", str, "platform JSON file", path=True),
    Key("categories", "categories", str, "TOML file adding ops or categories", path=True),
    Key(
        "out",
        "out",
        str,
        "folder of the runs: --out defaults to OUT/<trace name> (compare: "
        "OUT/<trace1>-vs-<trace2>)",
        path=True,
        commands=RUN_COMMANDS,
    ),
    Key("format", "format", str, "table format: csv, or parquet too (the parquet extra)"),
    Key("raw-csv", "raw_csv", bool, "text cells of the CSV tables written as they are"),
    Key("gate", "gate", float, "compare's regression gate, in percent"),
    Key("scheduler", "scheduler", str, "analyze-job's Dask scheduler address"),
    Key("workers", "workers", int, "analyze-job's embedded cluster size"),
    Key("allow-dir", "allow_dir", list, "serve's allowed directories", path=True),
    Key("workspace", "workspace", str, "serve's workspace folder", path=True),
    Key("max-result-kb", "max_result_kb", int, "serve's tool result size limit, KiB"),
    Key("log-level", "log_level", str, "log level (DEBUG, INFO, WARNING, ERROR, CRITICAL)"),
)
BY_NAME = {k.name: k for k in KEYS}


class Found(NamedTuple):
    """The file read and its checked values (paths already made absolute)."""

    path: Path | None = None
    values: dict[str, Any] = {}  # noqa: RUF012 (never mutated)
    searched_from: Path | None = None


# -- finding and reading the file ---------------------------------------------------------


def find(start: Path) -> Path | None:
    """The nearest config file from `start` upward (see the module's docstring)."""
    for folder in (start, *start.parents):
        own = folder / FILE_NAME
        if _is_file(own):
            return own
        project = folder / PYPROJECT
        if _is_file(project) and _has_table(project):
            return project
    return None


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a folder we may not look into is passed over
        return False


def _has_table(pyproject: Path) -> bool:
    import tomllib

    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False  # someone else's broken pyproject is not ours to refuse
    return isinstance(data.get("tool"), dict) and "rooflens" in data["tool"]


def load(explicit: str | None = None, *, no_config: bool = False, cwd: Path | None = None):
    """The config in force: `explicit` (--config), none (--no-config), or the nearest file."""
    if no_config:
        return Found(searched_from=None)
    try:
        start = (cwd or Path.cwd()).absolute()
    except OSError:  # the current folder was removed: no folder to search from
        return (
            Found() if explicit is None else Found(path=Path(explicit), values=read(Path(explicit)))
        )
    path = Path(explicit).expanduser().absolute() if explicit else find(start)
    if path is None:
        return Found(searched_from=start)
    return Found(path=path, values=read(path), searched_from=None if explicit else start)


def read(path: Path) -> dict[str, Any]:
    """The checked values of one file, or ConfigError."""
    import tomllib  # only when a file is found: `rooflens --help` stays light

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {path}: not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path}: cannot be read ({exc})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path}: not valid TOML: {exc}") from None
    where = f"{path}"
    if path.name == PYPROJECT:
        data = data.get("tool", {}).get("rooflens", {})
        where = f"{path} [tool.rooflens]"
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: must be a table")
    return {name: _checked(where, name, value, path.parent) for name, value in data.items()}


def _checked(where: str, name: str, value: Any, base: Path) -> Any:
    key = BY_NAME.get(name)
    if key is None:
        import difflib

        close = difflib.get_close_matches(name, BY_NAME, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"{where}: unknown key {name!r}{hint}; known keys: {', '.join(BY_NAME)}")
    value = _typed(where, key, value)
    if key.name == "log-level":
        try:
            value = parse_level(value)
        except BadLevel as exc:
            raise ConfigError(f"{where}: {exc}") from None
    if key.path:
        value = [_absolute(v, base) for v in value] if key.kind is list else _absolute(value, base)
    return value


def _typed(where: str, key: Key, value: Any) -> Any:
    """`value` if it has the key's type (an integer is a number too), else ConfigError."""
    kinds = {str: "a string", bool: "true or false", float: "a number", int: "an integer"}
    if key.kind is list:
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value
        raise ConfigError(f"{where}: {key.name!r} must be a string or a list of strings")
    ok = isinstance(value, key.kind) and not (key.kind is int and isinstance(value, bool))
    if key.kind is float and isinstance(value, int) and not isinstance(value, bool):
        ok, value = True, float(value)
    if not ok:
        raise ConfigError(f"{where}: {key.name!r} must be {kinds[key.kind]}, not {value!r}")
    return value


def _absolute(value: str, base: Path) -> str:
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base / path)


def load_or_fail(config: str | None, no_config: bool) -> Found | int:
    """The config in force, or the exit code after a one-line error."""
    try:
        return load(config, no_config=no_config)
    except ConfigError as exc:
        return fail(str(exc))
