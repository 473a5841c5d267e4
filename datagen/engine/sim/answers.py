"""Answers of the stand-in: a schema-valid instance of the request's JSON Schema, chosen
pseudo-randomly (seeded by the request id), or plain text without a schema. Not a model."""

from __future__ import annotations

import json
import random
from typing import Any

WORDS = [
    "open",
    "the",
    "menu",
    "search",
    "results",
    "next",
    "page",
    "button",
    "form",
    "item",
    "cart",
    "settings",
]


def instance(
    schema: dict[str, Any],
    rng: random.Random,
    *,
    click_bias: float,
    fixed_point: tuple[int, int] | None,
) -> Any:
    """A value valid against `schema` (the subset of JSON Schema that pydantic emits)."""
    defs = schema.get("$defs", {})
    return _value(schema, defs, rng, click_bias, fixed_point, depth=0)


def _value(
    s: dict[str, Any],
    defs: dict[str, Any],
    rng: random.Random,
    bias: float,
    point: tuple[int, int] | None,
    depth: int,
) -> Any:
    if "$ref" in s:
        return _value(defs[s["$ref"].rsplit("/", 1)[-1]], defs, rng, bias, point, depth)
    if "const" in s:
        return s["const"]
    if "enum" in s:
        return rng.choice(s["enum"])
    options = s.get("anyOf") or s.get("oneOf")
    if options:
        resolved = [defs[o["$ref"].rsplit("/", 1)[-1]] if "$ref" in o else o for o in options]
        clicks = [o for o in resolved if {"x", "y"} <= set(o.get("properties", {}))]
        pick = rng.choice(clicks) if clicks and rng.random() < bias else rng.choice(resolved)
        return _value(pick, defs, rng, bias, point, depth + 1)
    kind = s.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = s.get("properties", {})
        out = {}
        for name, sub in props.items():
            if point is not None and name in ("x", "y"):
                out[name] = point[0] if name == "x" else point[1]
            else:
                out[name] = _value(sub, defs, rng, bias, point, depth + 1)
        return out
    if kind == "array":
        n = max(s.get("minItems", 1), min(s.get("maxItems", 2), 2))
        return [_value(s.get("items", {}), defs, rng, bias, point, depth + 1) for _ in range(n)]
    if kind == "integer":
        return rng.randint(int(s.get("minimum", 0)), int(s.get("maximum", 1000)))
    if kind == "number":
        return round(rng.uniform(float(s.get("minimum", 0)), float(s.get("maximum", 1000))), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    words = [rng.choice(WORDS) for _ in range(rng.randint(1, 8))]
    while len(" ".join(words)) < s.get("minLength", 0):
        words.append(rng.choice(WORDS))
    text = " ".join(words)
    return text[: s["maxLength"]] if "maxLength" in s else text


def answer_text(
    schema: dict[str, Any] | None,
    rng: random.Random,
    *,
    click_bias: float,
    fixed_point: tuple[int, int] | None,
    text_reply: str,
    malformed: bool,
) -> str:
    """The content of one completion."""
    if schema is None:
        return text_reply
    text = json.dumps(instance(schema, rng, click_bias=click_bias, fixed_point=fixed_point))
    return text[: len(text) // 2] if malformed else text
