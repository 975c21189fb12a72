"""The worker's configuration: a preset, then the repository's file, then command-line flags.

The file is `worker.toml` at the repository root (its top level holds the keys), or else the
`[tool.worker]` table of `pyproject.toml`. When both exist `worker.toml` wins and the
`[tool.worker]` table is ignored entirely (not merged), so one file says everything. Layers merge
key by key; a list replaces the list below it. Path deny lists add to the built-in ones, and
`"!glob"` removes a built-in glob (see `PathPolicy.with_overrides`); tests stay protected unless
`allow_edit_tests = true`.

    test_cmd = "pytest -q"
    setup = "pip install -e .[test]"   (or false: none; absent: inferred from the repository)
    setup_network = "index"            (index, full or none)
    setup_env = ["MY_INDEX_TOKEN"]     (host variables passed to set-up only)
    setup_timeout_s = 900
    preset = "strict"
    [limits]    cpus, memory_mb, pids, tmp_mb, workspace_mb, command_timeout_s, total_timeout_s
    [budgets]   max_steps, max_tokens, max_cost_usd, max_wall_s, max_completion_tokens
    [paths]     read_allow, read_deny, write_allow, write_deny, allow_edit_tests
    [output]    max_bytes, max_lines
    [prices."model-name"]  input, output   (USD per million tokens)

An upper layer may declare top-level keys of its own (`search`: the search's settings, declared
in worker/search/settings.py, such as `edit_samples = 3`): their schema is given to
`config_schema` and `load_config`, their values come back in `WorkerConfig.search`, and what
they mean is that layer's alone.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, cast

from policies.budgets import BUDGETS, Budgets
from policies.errors import ConfigError
from policies.isolation import PLACEMENTS, Isolation, Placement
from policies.limits import Limits
from policies.paths import PathPolicy
from policies.plain_schema import surely_valid
from policies.truncation import Truncation

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ToolMode = Literal["auto", "native", "json_schema", "text"]
TOOL_MODES: tuple[str, ...] = ("auto", "native", "json_schema", "text")
# Which edit tools the model gets: unified diffs, exact-snippet replacement, or both.
EditTools = Literal["patch", "replace", "both"]
EDIT_TOOLS: tuple[str, ...] = ("patch", "replace", "both")
PRESETS: tuple[str, ...] = ("default", "strict", "ci")
SetupNetwork = Literal["index", "full", "none"]
SETUP_NETWORKS: tuple[str, ...] = ("index", "full", "none")
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
_SECTIONS = ("limits", "budgets", "paths", "output")


def preset_values(name: str) -> dict[str, Any]:
    """The settings of a named preset, in the shape of the config file (a fresh dict).

    >>> preset_values("strict")["budgets"]["max_steps"]
    15
    >>> preset_values("fast")
    Traceback (most recent call last):
    ...
    policies.errors.ConfigError: unknown preset 'fast'; presets are: default, strict, ci
    """
    if name == "default":
        limits = dict(cpus=1.0, memory_mb=2048, pids=4096, tmp_mb=256)
        limits |= dict(command_timeout_s=300.0, total_timeout_s=1800.0)
        return {
            "limits": limits,
            "budgets": _budgets(name),
            "output": {"max_bytes": 16_000, "max_lines": 400},
        }
    if name == "strict":
        limits = dict(cpus=1.0, memory_mb=1024, pids=128, tmp_mb=64)
        limits |= dict(command_timeout_s=120.0, total_timeout_s=600.0)
        return {
            "limits": limits,
            "budgets": _budgets(name),
            "output": {"max_bytes": 8_000, "max_lines": 200},
        }
    if name == "ci":
        # Unattended: every clock bounded (policies/budgets.BUDGETS too); no cost cap, since a
        # cap needs a known price.
        limits = dict(cpus=2.0, memory_mb=2048, pids=4096, tmp_mb=256)
        limits |= dict(command_timeout_s=300.0, total_timeout_s=1200.0)
        return {
            "limits": limits,
            "budgets": _budgets(name),
            "output": {"max_bytes": 16_000, "max_lines": 400},
        }
    raise ConfigError(f"unknown preset {name!r}; presets are: {', '.join(PRESETS)}")


def _budgets(preset: str) -> dict[str, int | float]:
    """The preset's budgets, from policies/budgets.BUDGETS (those it leaves unset: no cap)."""
    values = {b.name: b.preset(preset) for b in BUDGETS}
    return {name: value for name, value in values.items() if value is not None}


def config_schema(search: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The JSON Schema of the config table (`[tool.worker]` or `worker.toml`); `search`: the
    schemas of the keys an upper layer declares (after the model-call keys)."""

    def table(props: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {"type": "object", "properties": props, "additionalProperties": False, **extra}

    pos_int = {"type": "integer", "exclusiveMinimum": 0}
    pos_num = {"type": "number", "exclusiveMinimum": 0}
    text = {"type": "string", "minLength": 1}
    globs = {"type": "array", "items": text}
    usd = {"type": "number", "minimum": 0}
    return table(
        {
            "preset": {"enum": list(PRESETS)},
            "test_cmd": text,
            "setup": {"oneOf": [text, {"const": False}]},
            "setup_network": {"enum": list(SETUP_NETWORKS)},
            "setup_env": {"type": "array", "items": {"type": "string", "pattern": ENV_NAME}},
            "setup_timeout_s": pos_num,
            "image": text,
            "tool_mode": {"enum": list(TOOL_MODES)},
            "edit_tools": {"enum": list(EDIT_TOOLS)},
            **{key: dict(schema) for key, schema in (search or {}).items()},
            "model": text,
            "base_url": text,
            "temperature": {"type": "number", "minimum": 0, "maximum": 2},
            "limits": table(
                {k: pos_num for k in ("cpus", "command_timeout_s", "total_timeout_s")}
                | {k: pos_int for k in ("memory_mb", "pids", "tmp_mb", "workspace_mb")}
            ),
            "budgets": table({b.name: b.schema() for b in BUDGETS}),
            "paths": table(
                {k: globs for k in ("read_allow", "read_deny", "write_allow", "write_deny")}
                | {"allow_edit_tests": {"type": "boolean"}}
            ),
            "output": table({"max_bytes": pos_int, "max_lines": pos_int}),
            "sandbox": table(
                {k: {"type": "boolean"} for k in Isolation.__dataclass_fields__}
                | {"placement": {"enum": list(PLACEMENTS)}}
            ),
            "prices": {
                "type": "object",
                "additionalProperties": table(
                    {"input": usd, "output": usd}, required=["input", "output"]
                ),
            },
        }
    )


@dataclass(frozen=True, kw_only=True)
class WorkerConfig:
    """Everything a run is configured with, after presets, file and flags are merged."""

    preset: str = "default"
    test_cmd: str | None = None
    setup: str | None = None
    # With no `setup` given, one is inferred from the repository's files (`setup = false` or
    # --no-setup: none at all).
    setup_infer: bool = True
    # What the set-up phase may reach: only the package index, through a filtering proxy
    # (index), the default bridge network (full), or nothing (none).
    setup_network: SetupNetwork = "index"
    setup_env: tuple[str, ...] = ()  # host variables passed to set-up only (a private index's)
    setup_timeout_s: float = 900.0
    image: str | None = None
    limits: Limits = field(default_factory=Limits)
    isolation: Isolation = field(default_factory=Isolation)
    placement: Placement = "auto"  # where the working copy lives for the container
    budgets: Budgets = field(default_factory=Budgets)
    paths: PathPolicy = field(default_factory=PathPolicy)
    truncation: Truncation = field(default_factory=Truncation)
    tool_mode: ToolMode = "auto"
    edit_tools: EditTools = "both"
    # The values of the keys an upper layer declared (config_schema's `search`), as given.
    search: Mapping[str, object] = field(default_factory=dict)
    model: str | None = None
    base_url: str | None = None
    temperature: float = 0.0
    prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    allow_edit_tests: bool = False
    sources: tuple[str, ...] = ()  # the files read, for the run report

    def __post_init__(self) -> None:
        frozen = {m: MappingProxyType(dict(p)) for m, p in self.prices.items()}
        object.__setattr__(self, "prices", MappingProxyType(frozen))
        object.__setattr__(self, "search", MappingProxyType(dict(self.search)))

    def price_for(self, model: str) -> Mapping[str, float] | None:
        """The user's price for `model` (`input`/`output` USD per million tokens), if given."""
        return self.prices.get(model)


def load_config(
    repo: Path,
    *,
    preset: str | None = None,
    overrides: Mapping[str, object] | None = None,
    search: Mapping[str, Mapping[str, Any]] | None = None,
    paths: PathPolicy | None = None,
) -> WorkerConfig:
    """Load the configuration of `repo`; `overrides` are command-line values (None = unset);
    `search`: the keys an upper layer declares, with their schemas (config_schema); `paths`:
    the path policy the user's `[paths]` settings change (an upper layer's, with the language
    packages' protected files; this layer's neutral defaults when None).

    Override keys are a top-level key (`model`), a section key by its own name (`max_steps`)
    or dotted (`budgets.max_steps`). Raises `ConfigError` naming the offending key.
    """
    repo = Path(repo)
    if not repo.is_dir():
        raise ConfigError(f"repository {str(repo)!r} is not a directory")
    schema = config_schema(search)
    source, file_layer = _read_file(repo)
    if source:
        _validate(file_layer, schema, source)
    flags = _route_overrides(overrides or {}, schema)
    _validate(flags, schema, "command-line flags")
    name = preset or cast(str | None, flags.get("preset")) or file_layer.get("preset") or "default"
    merged = _merge(_merge(preset_values(name), file_layer), flags)
    try:
        return _build(
            merged, name, search=search or {}, paths=paths or PathPolicy(),
            sources=(source,) if source else (),
        )  # fmt: skip
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"invalid configuration: {exc}") from None


def _read_file(repo: Path) -> tuple[str, dict[str, Any]]:
    for name in ("worker.toml", "pyproject.toml"):
        path = repo / name
        if not path.is_file():
            continue
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{name}: not valid TOML: {exc}") from None
        if name == "worker.toml":
            return name, data
        table = data.get("tool", {}).get("worker")
        if table is None:
            return "", {}
        if not isinstance(table, dict):
            raise ConfigError("pyproject.toml: [tool.worker] must be a table")
        return "pyproject.toml [tool.worker]", table
    return "", {}


def _route_overrides(overrides: Mapping[str, object], schema: dict[str, Any]) -> dict[str, Any]:
    """Nest flat command-line keys (`max_steps`, `budgets.max_steps`) into config shape."""
    top = schema["properties"]
    owner = {leaf: s for s in _SECTIONS for leaf in top[s]["properties"]}
    nested: dict[str, Any] = {}
    for key, value in overrides.items():
        if value is None:
            continue
        section, _, leaf = key.rpartition(".")
        if not section and leaf in owner:
            section = owner[leaf]
        if section:
            nested.setdefault(section, {})[leaf] = value
        else:
            nested[leaf] = value
    return nested


def _validate(data: dict[str, Any], schema: dict[str, Any], source: str) -> None:
    _check_keys(data, schema, source, path=())
    if surely_valid(data, schema):  # plain flags: no jsonschema import before the sandbox
        return
    import jsonschema

    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(data)
    )
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
        raise ConfigError(f"{source}: {where}: {error.message}")


def _check_keys(data: Any, schema: dict[str, Any], source: str, path: tuple[str, ...]) -> None:
    """Name the first unknown key, and the nearest valid one."""
    if not isinstance(data, dict) or schema.get("type") != "object":
        return
    props: dict[str, Any] = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, value in data.items():
        if key in props:
            _check_keys(value, props[key], source, (*path, key))
        elif isinstance(extra, dict):
            _check_keys(value, extra, source, (*path, key))
        elif extra is False:
            dotted = ".".join((*path, key))
            raise ConfigError(f"{source}: unknown key {dotted!r}{_hint(key, path, list(props))}")


def _hint(key: str, path: tuple[str, ...], valid: list[str]) -> str:
    schema = config_schema()
    if not path and key == "tool":
        return "; worker.toml holds the keys of [tool.worker] at its top level"
    for section in _SECTIONS:
        if key in schema["properties"][section]["properties"] and path != (section,):
            return f"; did you mean {section}.{key}?"
    close = difflib.get_close_matches(key, valid, n=1)
    suggestion = f"; did you mean {close[0]!r}?" if close else ""
    return f"{suggestion} Valid keys here: {', '.join(valid)}"


def _merge(base: dict[str, Any], layer: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in layer.items():
        below = merged.get(key)
        both = isinstance(below, dict) and isinstance(value, dict)
        merged[key] = _merge(cast(dict[str, Any], below), value) if both else value
    return merged


def _build(
    merged: dict[str, Any],
    preset: str,
    *,
    search: Mapping[str, object],
    paths: PathPolicy,
    sources: tuple[str, ...],
) -> WorkerConfig:
    path_keys = dict(merged.get("paths", {}))
    allow_edit_tests = bool(path_keys.pop("allow_edit_tests", False))
    paths = paths.with_overrides(**path_keys, allow_edit_tests=allow_edit_tests)
    return WorkerConfig(
        preset=preset,
        test_cmd=merged.get("test_cmd"),
        setup=merged.get("setup") or None,
        setup_infer=merged.get("setup") is not False,
        setup_network=merged.get("setup_network", "index"),
        setup_env=tuple(dict.fromkeys(merged.get("setup_env", ()))),
        setup_timeout_s=float(merged.get("setup_timeout_s", 900.0)),
        image=merged.get("image"),
        limits=Limits(**merged.get("limits", {})),
        isolation=Isolation(
            **{k: v for k, v in merged.get("sandbox", {}).items() if k != "placement"}
        ),
        placement=merged.get("sandbox", {}).get("placement", "auto"),
        budgets=Budgets(**merged.get("budgets", {})),
        paths=paths,
        truncation=Truncation(**merged.get("output", {})),
        tool_mode=merged.get("tool_mode", "auto"),
        edit_tools=merged.get("edit_tools", "both"),
        search={key: merged[key] for key in search if key in merged},
        model=merged.get("model"),
        base_url=merged.get("base_url"),
        temperature=float(merged.get("temperature", 0.0)),
        prices=merged.get("prices", {}),
        allow_edit_tests=allow_edit_tests,
        sources=sources,
    )
