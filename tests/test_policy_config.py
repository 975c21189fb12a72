"""Configuration: presets, then pyproject.toml or worker.toml, then flags; mistakes are named."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from policies.config import PRESETS, config_schema, load_config, preset_values
from policies.errors import ConfigError
from sandbox.ecosystems import language_paths


def write(repo: Path, name: str, text: str) -> Path:
    path = repo / name
    path.write_text(text, encoding="utf-8")
    return path


def test_no_config_file_gives_the_default_preset(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config.preset == "default"
    assert config.budgets.max_steps == 30
    assert config.limits.memory_mb == 2048
    assert config.tool_mode == "auto"
    assert config.temperature == 0.0
    assert config.test_cmd is None
    assert config.sources == ()
    assert not config.paths.is_writable("tests/test_x.py")


def test_pyproject_tool_worker_table_is_read(tmp_path: Path) -> None:
    write(
        tmp_path,
        "pyproject.toml",
        """
[project]
name = "demo"

[tool.worker]
test_cmd = "pytest -q tests"
model = "gpt-4o-mini"
tool_mode = "native"
temperature = 0.2

[tool.worker.limits]
memory_mb = 4096
cpus = 2

[tool.worker.budgets]
max_steps = 12
max_cost_usd = 1.5

[tool.worker.output]
max_lines = 50

[tool.worker.prices."gpt-4o-mini"]
input = 0.15
output = 0.6
""",
    )
    config = load_config(tmp_path)
    assert config.test_cmd == "pytest -q tests"
    assert config.model == "gpt-4o-mini"
    assert config.tool_mode == "native"
    assert config.temperature == 0.2
    assert (config.limits.memory_mb, config.limits.cpus) == (4096, 2)
    assert config.limits.pids == 4096  # untouched keys keep the preset's value
    assert (config.budgets.max_steps, config.budgets.max_cost_usd) == (12, 1.5)
    assert config.truncation.max_lines == 50
    assert config.price_for("gpt-4o-mini") == {"input": 0.15, "output": 0.6}
    assert config.price_for("other") is None
    assert config.sources == ("pyproject.toml [tool.worker]",)


def test_the_answer_cap_has_a_default_and_is_configurable(tmp_path: Path) -> None:
    assert load_config(tmp_path).budgets.max_completion_tokens is None  # the run's default
    write(tmp_path, "worker.toml", "[budgets]\nmax_completion_tokens = 512\n")
    assert load_config(tmp_path).budgets.max_completion_tokens == 512
    write(tmp_path, "worker.toml", "[budgets]\nmax_completion_tokens = 0\n")
    with pytest.raises(ConfigError, match="max_completion_tokens"):
        load_config(tmp_path)


def test_pyproject_without_a_worker_table_is_fine(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[project]\nname = "demo"\n')
    assert load_config(tmp_path).preset == "default"


def test_worker_toml_wins_over_pyproject_entirely(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[tool.worker]\nmodel = "a"\nimage = "img:1"\n')
    write(tmp_path, "worker.toml", 'model = "b"\n[budgets]\nmax_steps = 7\n')
    config = load_config(tmp_path)
    assert config.model == "b"
    assert config.image is None  # pyproject's table is not merged in
    assert config.budgets.max_steps == 7
    assert config.sources == ("worker.toml",)


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_builds_and_is_valid_against_the_schema(tmp_path: Path, name: str) -> None:
    jsonschema.validate(preset_values(name), config_schema())
    assert load_config(tmp_path, preset=name).preset == name


def test_strict_is_tighter_than_default_everywhere(tmp_path: Path) -> None:
    default, strict = load_config(tmp_path), load_config(tmp_path, preset="strict")
    assert strict.budgets.max_steps < default.budgets.max_steps
    assert strict.limits.memory_mb < default.limits.memory_mb
    assert strict.limits.command_timeout_s < default.limits.command_timeout_s
    assert strict.limits.total_timeout_s < default.limits.total_timeout_s
    assert strict.truncation.max_bytes < default.truncation.max_bytes
    assert strict.budgets.max_tokens is not None


def test_ci_bounds_the_wall_clock_without_a_cost_cap(tmp_path: Path) -> None:
    ci = load_config(tmp_path, preset="ci")
    assert ci.budgets.max_wall_s is not None and ci.budgets.max_wall_s <= 20 * 60
    assert ci.limits.total_timeout_s <= 20 * 60
    assert ci.budgets.max_cost_usd is None


def test_file_chooses_a_preset_and_overrides_parts_of_it(tmp_path: Path) -> None:
    write(tmp_path, "worker.toml", 'preset = "strict"\n[limits]\nmemory_mb = 3000\n')
    config = load_config(tmp_path)
    assert config.preset == "strict"
    assert config.limits.memory_mb == 3000
    assert config.budgets.max_steps == 15


def test_preset_argument_beats_the_file_preset(tmp_path: Path) -> None:
    write(tmp_path, "worker.toml", 'preset = "strict"\n')
    assert load_config(tmp_path, preset="ci").preset == "ci"


def test_flags_override_the_file_and_none_means_unset(tmp_path: Path) -> None:
    write(tmp_path, "worker.toml", 'model = "file-model"\n[budgets]\nmax_steps = 7\n')
    config = load_config(
        tmp_path,
        overrides={
            "model": "flag-model",
            "max_steps": 3,
            "limits.memory_mb": 512,
            "test_cmd": None,
            "allow_edit_tests": True,
        },
    )
    assert config.model == "flag-model"
    assert config.budgets.max_steps == 3
    assert config.limits.memory_mb == 512
    assert config.test_cmd is None
    assert config.allow_edit_tests
    assert config.paths.is_writable("tests/test_x.py")


def test_allow_edit_tests_in_the_file_widens_the_path_policy(tmp_path: Path) -> None:
    write(tmp_path, "worker.toml", "[paths]\nallow_edit_tests = true\n")
    config = load_config(tmp_path, paths=language_paths())
    assert config.paths.is_writable("tests/test_x.py")
    assert not config.paths.is_writable("pyproject.toml")


def test_path_lists_narrow_and_widen(tmp_path: Path) -> None:
    write(
        tmp_path,
        "worker.toml",
        '[paths]\nwrite_allow = ["src/**"]\nread_deny = ["private/**"]\n'
        'write_deny = ["!**/setup.cfg", "src/generated/**"]\n',
    )
    paths = load_config(tmp_path, paths=language_paths()).paths  # as the command line loads it
    assert paths.is_writable("src/setup.cfg")  # a language package's glob, removed by the user
    assert not paths.is_writable("docs/x.md")
    assert not paths.is_writable("src/generated/x.py")
    assert paths.is_writable("src/app.py")
    assert not paths.is_readable("private/a.txt")
    assert not paths.is_readable(".env")  # built-in secrets are kept
    assert not paths.is_writable("src/tests/test_a.py")  # tests stay protected


def test_removing_a_glob_that_is_not_built_in_is_a_config_error(tmp_path: Path) -> None:
    write(tmp_path, "worker.toml", '[paths]\nwrite_deny = ["!tests/**"]\n')
    with pytest.raises(ConfigError, match="removes nothing"):
        load_config(tmp_path)


@pytest.mark.parametrize(
    ("text", "named", "hint"),
    [
        ('modle = "x"\n', "'modle'", "did you mean 'model'"),
        ("[limits]\nmemroy_mb = 1\n", "'limits.memroy_mb'", "did you mean 'memory_mb'"),
        ("[budgets]\nmemory_mb = 1\n", "'budgets.memory_mb'", "limits.memory_mb"),
        ("max_steps = 3\n", "'max_steps'", "budgets.max_steps"),
        ('[prices."m"]\ninput = 1\noutput = 2\ncached = 3\n', "'prices.m.cached'", "input"),
        ("[tool.worker]\nmodel = 1\n", "'tool'", "top level"),
    ],
)
def test_unknown_key_is_an_error_naming_the_key(
    tmp_path: Path, text: str, named: str, hint: str
) -> None:
    write(tmp_path, "worker.toml", text)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    message = str(info.value)
    assert message.startswith("worker.toml: unknown key")
    assert named in message and hint in message


def test_unknown_key_in_pyproject_names_the_source(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[tool.worker]\ntimeout = 3\n")
    with pytest.raises(ConfigError, match=r"pyproject.toml \[tool.worker\]: unknown key 'timeout'"):
        load_config(tmp_path)


def test_unknown_flag_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="command-line flags: unknown key 'max_stpes'"):
        load_config(tmp_path, overrides={"max_stpes": 3})


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('[limits]\nmemory_mb = "lots"\n', "limits.memory_mb"),
        ("[budgets]\nmax_steps = 0\n", "budgets.max_steps"),
        ("[budgets]\nmax_steps = true\n", "budgets.max_steps"),
        ('tool_mode = "xml"\n', "tool_mode"),
        ("temperature = 5\n", "temperature"),
        ('[paths]\nwrite_deny = "docs/**"\n', "paths.write_deny"),
        ('[prices."m"]\ninput = 1\n', "prices.m"),
        ('preset = "fast"\n', "preset"),
    ],
)
def test_wrong_type_or_value_is_an_error_naming_the_key(
    tmp_path: Path, text: str, where: str
) -> None:
    write(tmp_path, "worker.toml", text)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert str(info.value).startswith(f"worker.toml: {where}:")


def test_wrong_type_flag_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="command-line flags: limits.memory_mb"):
        load_config(tmp_path, overrides={"memory_mb": "2g"})


def test_unknown_preset_argument_lists_the_presets(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="presets are: default, strict, ci"):
        load_config(tmp_path, preset="fast")


def test_invalid_toml_is_a_config_error_naming_the_file(tmp_path: Path) -> None:
    write(tmp_path, "worker.toml", "model = \n")
    with pytest.raises(ConfigError, match="worker.toml: not valid TOML"):
        load_config(tmp_path)


def test_missing_repository_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a directory"):
        load_config(tmp_path / "nope")


def test_config_is_frozen_including_prices(tmp_path: Path) -> None:
    write(tmp_path, "worker.toml", '[prices."m"]\ninput = 1\noutput = 2\n')
    config = load_config(tmp_path)
    with pytest.raises(AttributeError):
        config.model = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.prices["m"]["input"] = 0  # type: ignore[index]
