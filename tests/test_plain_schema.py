"""policies/plain_schema.py: the quick yes never says yes where jsonschema says no, the flags a
run gets are checked without importing jsonschema, and a bad flag is still named as before."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from policies.config import ConfigError, config_schema, load_config
from policies.plain_schema import surely_valid
from worker.search.settings import config_fragment

ROOT = Path(__file__).resolve().parent.parent


def _leaves(schema: dict[str, Any], path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for key, sub in schema.get("properties", {}).items():
        if sub.get("type") == "object" and "properties" in sub:
            found += _leaves(sub, (*path, key))
        else:
            found.append((*path, key))
    return found


def _nest(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    data: Any = value
    for key in reversed(path):
        data = {key: data}
    return dict(data)


CANDIDATES: list[Any] = [
    None, True, False, 0, 1, -1, 0.5, 2.0, 10**9, -(10**9), "", "x", "auto", "native",
    "docker", "local", "copied", "mounted", "strict", "default", "pytest -q", [], ["a"], [1],
    ["", "b"], {}, {"a": 1}, float("inf"),
]  # fmt: skip


def test_the_quick_yes_agrees_with_jsonschema_on_every_key_of_the_configuration():
    schema = config_schema(config_fragment())
    validator = jsonschema.Draft202012Validator(schema)
    said_yes = 0
    for path, value in itertools.product(_leaves(schema), CANDIDATES):
        data = _nest(path, value)
        if surely_valid(data, schema):
            said_yes += 1
            assert validator.is_valid(data), (path, value)
    # and it does say yes: most keys take some of these values
    assert said_yes > len(_leaves(schema))


def test_the_quick_yes_agrees_on_random_schemas():
    rng = random.Random(7)
    keywords: list[tuple[str, Any]] = [
        ("type", "integer"), ("type", "number"), ("type", "string"), ("type", ["string", "null"]),
        ("type", "boolean"), ("type", "array"), ("minimum", 0), ("maximum", 3),
        ("exclusiveMinimum", 0), ("exclusiveMaximum", 2.5), ("minLength", 1), ("maxLength", 2),
        ("enum", ["a", 1, None, True]), ("const", 1), ("items", {"type": "integer"}),
        ("minItems", 1), ("maxItems", 1), ("pattern", "^a"), ("oneOf", [{"type": "integer"}]),
    ]  # fmt: skip
    values: list[Any] = [*CANDIDATES, 1.0, 3, 2, "ab", "abc", [1, 2], ["a", "b"]]
    for _ in range(3000):
        sub = dict(rng.sample(keywords, rng.randint(1, 3)))
        schema = {"type": "object", "properties": {"k": sub}, "additionalProperties": False}
        data = {"k": rng.choice(values)}
        if surely_valid(data, schema):
            assert jsonschema.Draft202012Validator(schema).is_valid(data), (sub, data)


def test_a_run_s_flags_are_checked_without_importing_jsonschema(tmp_path):
    # jsonschema's import is 70-100 ms before the sandbox can start (docs/performance.md).
    code = (
        "import sys; from pathlib import Path; from policies.config import load_config;"
        "from worker.search.settings import config_fragment;"
        "c = load_config(Path(sys.argv[1]), overrides={'max_steps': 15, 'max_wall_s': 600.0,"
        " 'tool_mode': 'auto', 'test_cmd': 'pytest -q', 'image': None},"
        " search=config_fragment());"
        "print(c.budgets.max_steps, 'jsonschema' in sys.modules)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    assert proc.stdout.split() == ["15", "False"]


@pytest.mark.parametrize(
    ("overrides", "said"),
    [
        (
            {"max_steps": 0},
            "command-line flags: budgets.max_steps: 0 is less than or equal to the minimum of 0",
        ),
        ({"tool_mode": "psychic"}, "command-line flags: tool_mode: 'psychic' is not one of"),
    ],
)
def test_a_bad_flag_is_named_as_jsonschema_names_it(tmp_path, overrides, said):
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, overrides=overrides, search=config_fragment())
    assert str(caught.value).startswith(said)
