"""A quick yes for plain values against a plain JSON Schema, so that jsonschema is imported only
when something may be wrong.

`jsonschema` costs 70-100 ms of one core to import (141 ms loaded), all of it before a run's
sandbox can start, since the command-line flags are checked against the configuration's schema.
The flags are nearly always plain (numbers in range, strings from a list). `surely_valid` says
yes only where it understands every keyword on the way and the value satisfies each one; any
other keyword (`oneOf`, `pattern`, `$ref`...) or any doubt answers False, and the caller asks
jsonschema, whose message names the fault. It never says yes to what jsonschema refuses.
"""

from __future__ import annotations

from typing import Any

#: Keywords that say nothing about validity.
_NOTES = frozenset({"description", "title", "default", "examples", "$comment", "deprecated"})
#: Keywords checked here; a schema with any other is left to jsonschema.
_CHECKED = frozenset(
    {
        "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "minLength", "maxLength", "properties", "additionalProperties", "required", "items",
        "minItems", "maxItems",
    }
)  # fmt: skip


def surely_valid(value: Any, schema: Any) -> bool:
    """True only if `value` is valid against `schema` (Draft 2020-12) by keywords checked here;
    False means "ask jsonschema", not "invalid"."""
    if schema is True or schema == {}:
        return True
    if not isinstance(schema, dict) or not set(schema) <= _CHECKED | _NOTES:
        return False
    return all(
        _holds(keyword, schema[keyword], value, schema) for keyword in _CHECKED & set(schema)
    )


def _holds(keyword: str, arg: Any, value: Any, schema: dict[str, Any]) -> bool:
    if keyword == "type":
        return any(_is_type(value, name) for name in ([arg] if isinstance(arg, str) else arg))
    if keyword == "enum":
        return any(_same(value, option) for option in arg)
    if keyword == "const":
        return _same(value, arg)
    if keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return not _is_number(value) or _in_bound(keyword, value, arg)
    if keyword in ("minLength", "maxLength"):
        return not isinstance(value, str) or _within(keyword, len(value), arg)
    if keyword in ("minItems", "maxItems"):
        return not isinstance(value, list) or _within(keyword, len(value), arg)
    if keyword == "items":
        return not isinstance(value, list) or all(surely_valid(item, arg) for item in value)
    if keyword == "required":
        return not isinstance(value, dict) or all(name in value for name in arg)
    if not isinstance(value, dict):
        return True
    properties: dict[str, Any] = schema.get("properties", {})
    if keyword == "properties":
        return all(surely_valid(value[key], sub) for key, sub in arg.items() if key in value)
    # additionalProperties: the keys `properties` does not name
    return all(surely_valid(item, arg) for key, item in value.items() if key not in properties)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":  # a float with no fraction is an integer to jsonschema: ask it
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return _is_number(value)
    kinds: dict[str, type | tuple[type, ...]] = {
        "string": str, "boolean": bool, "object": dict, "array": list, "null": type(None),
    }  # fmt: skip
    kind = kinds.get(name)
    return kind is not None and isinstance(value, kind)


def _same(value: Any, option: Any) -> bool:
    """JSON equality for plain values: 1 and True differ, 1 and 1.0 do not (asked elsewhere)."""
    if isinstance(value, bool) or isinstance(option, bool):
        return type(value) is type(option) and value == option
    return bool(value == option) if _plain(value) and _plain(option) else False


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float)


def _in_bound(keyword: str, value: float, bound: Any) -> bool:
    if not _is_number(bound):
        return False
    return {
        "minimum": value >= bound,
        "maximum": value <= bound,
        "exclusiveMinimum": value > bound,
        "exclusiveMaximum": value < bound,
    }[keyword]


def _within(keyword: str, size: int, bound: Any) -> bool:
    if not isinstance(bound, int) or isinstance(bound, bool):
        return False
    return size >= bound if keyword.startswith("min") else size <= bound
