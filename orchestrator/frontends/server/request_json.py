"""Reading an assessment request's text as JSON, strictly: a clear :class:`InvalidAssessment`
for anything that is not plain JSON (Infinity/NaN, absurd nesting, huge integers, a fenced
block is unwrapped)."""

from __future__ import annotations

import json
import re
from typing import Any

from orchestrator.errors import UserError

EXAMPLE = (
    '{"participants": {"agent": "http://host:port/"}, '
    '"config": {"instance_ids": ["django__django-11099"]}}'
)
# the longest request text accepted, in characters (a full list of the 500 ids is ~14 kB)
MAX_REQUEST_CHARS = 1_000_000
# the deepest JSON nesting accepted in a request (a real one is 3 deep)
MAX_DEPTH = 32


class InvalidAssessment(UserError):
    """The assessment request cannot be run as sent; the message says what is wrong."""


def _reject_constant(name: str) -> Any:
    raise InvalidAssessment(
        f"The assessment request is not plain JSON: it contains {name}.",
        "give finite numbers within the documented limits.",
    )


def loads(body: str) -> Any:
    """``json.loads`` that rejects Infinity/NaN, absurd nesting and huge integers clearly."""
    fix = f"send one message whose text is JSON like {EXAMPLE}."
    depth = max_depth(body)
    if depth > MAX_DEPTH:
        raise InvalidAssessment(
            f"The assessment request nests {depth} levels deep; the limit is {MAX_DEPTH}.", fix
        )
    try:
        return json.loads(body, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InvalidAssessment(
            f"The assessment request is not JSON ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno}).",
            fix,
        ) from None
    except InvalidAssessment:
        raise
    except (ValueError, RecursionError) as exc:  # e.g. an integer of thousands of digits
        raise InvalidAssessment(
            f"The assessment request cannot be read as JSON: {exc}.",
            "give numbers of a sensible size, within the documented limits.",
        ) from None


def max_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in a JSON text (brackets inside strings skipped)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def unfence(text: str) -> str:
    match = re.fullmatch(r"```[\w-]*\s*\n(.*?)\n?```", text, flags=re.DOTALL)
    return match[1].strip() if match else text


def json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if value is None:
        return "null"
    return "object"
