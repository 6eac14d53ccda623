"""The sandbox tools as a model sees them: names, plain descriptions and JSON schemas.

``TOOLS`` is in Anthropic's tool format (``name``, ``description``, ``input_schema``) and is
also what the participant protocol sends. ``validate_arguments`` checks a call against these
schemas on the host before anything runs in a container.

Directory listing is not a separate tool: ``view`` on a directory lists it two levels deep.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from sandbox_tools.contract import TESTBED

WORKDIR = TESTBED
DEFAULT_TIMEOUT = 180
MAX_TIMEOUT = 3600
MAX_SEARCH_RESULTS = 1000

BASH = {
    "name": "bash",
    "description": (
        "Run a shell command with bash in the repository's container and get its combined "
        "stdout and stderr and its exit code. Every call starts in the directory the previous "
        f"call ended in (initially {TESTBED}) with the variables previous calls exported "
        "(`export NAME=value`), and with the repository's Python environment activated; shell "
        "options, aliases, functions and unexported variables do not carry over. The command "
        "gets no input (stdin is empty): nothing interactive works. It is killed after "
        f"`timeout` seconds (default {DEFAULT_TIMEOUT}). A background process that keeps the "
        "output open makes the call wait until the timeout: start servers with "
        "`nohup cmd > /tmp/log 2>&1 &`. Long output is cut in the middle with a marker; "
        "redirect it to a file and read parts of it with `view` or `grep`."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "description": "The command line, e.g. `python -m pytest tests/test_x.py -x -q`.",
            },
            "timeout": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TIMEOUT,
                "description": f"Seconds before the command is killed (default {DEFAULT_TIMEOUT}).",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    },
}

VIEW = {
    "name": "view",
    "description": (
        "Show a text file with line numbers, or list a directory. For a file, pass view_range "
        "[start, end] (1-based, inclusive; end -1 means the end of the file) to see part of it; "
        "long files are cut with a marker telling which lines were left out. Bytes that are "
        "not UTF-8 are shown as U+FFFD; binary files are refused. For a directory, lists the "
        "files and subdirectories up to 2 levels deep (subdirectories end with '/'), leaving "
        f"out hidden ones (names starting with '.'). Relative paths are taken from {TESTBED}."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": f"File or directory, e.g. {TESTBED}/src/pkg/module.py.",
            },
            "view_range": {
                "type": "array",
                "items": {"type": "integer"},
                "minItems": 2,
                "maxItems": 2,
                "description": "Optional [start, end] line range for a file, e.g. [100, 160].",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
}

EDIT = {
    "name": "edit",
    "description": (
        "Change a text file. Commands: `create` writes file_text as the whole file (parent "
        "directories are created; an existing file is replaced); `str_replace` replaces "
        "old_str with new_str, where old_str must match the file exactly once, whitespace and "
        "indentation included (with no match or several matches nothing changes and the "
        "error says how many and where; omit new_str to delete old_str); `insert` inserts "
        "insert_text after line insert_line (0 inserts at the top); `undo` reverts the last "
        "change this tool made to the file (repeat to go further back). Edits made with bash "
        f"cannot be undone here. Relative paths are taken from {TESTBED}."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "enum": ["create", "str_replace", "insert", "undo"],
                "description": "What to do.",
            },
            "path": {"type": "string", "description": f"The file, e.g. {TESTBED}/pkg/mod.py."},
            "file_text": {"type": "string", "description": "create: the whole new content."},
            "old_str": {
                "type": "string",
                "description": "str_replace: the exact text to replace (must occur once).",
            },
            "new_str": {
                "type": "string",
                "description": "str_replace: the replacement text (default: empty).",
            },
            "insert_line": {
                "type": "integer",
                "minimum": 0,
                "description": "insert: the line after which to insert (0 = top of the file).",
            },
            "insert_text": {
                "type": "string",
                "description": "insert: the text to insert (new_str is accepted too).",
            },
        },
        "required": ["command", "path"],
        "additionalProperties": False,
    },
}

SEARCH = {
    "name": "search",
    "description": (
        "Search files for a regular expression (Python `re` syntax) and list the matching "
        "lines as `path:line: text`. Searches a file, or every file under a directory "
        f"(default {TESTBED}), skipping hidden directories such as .git, __pycache__, binary "
        "files and files over 20 MB. Narrow it with glob (a file-name pattern such as `*.py`, "
        "or a path pattern relative to path such as `tests/*.py`). At most max_results "
        "matches are shown (default 100); the output says how many more there were."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "pattern": {
                "type": "string",
                "description": r"Regular expression, e.g. `def parse_\w+` or `class Foo\b`.",
            },
            "path": {
                "type": "string",
                "description": f"Directory or file to search (default {TESTBED}).",
            },
            "glob": {"type": "string", "description": "Only files matching this, e.g. `*.py`."},
            "case_insensitive": {
                "type": "boolean",
                "description": "Ignore case (default false).",
            },
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_SEARCH_RESULTS,
                "description": "How many matching lines to show at most (default 100).",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
}

TOOLS: list[dict[str, Any]] = [BASH, VIEW, EDIT, SEARCH]
TOOL_NAMES: tuple[str, ...] = tuple(tool["name"] for tool in TOOLS)
SETUP_AGENT_TOOL_NAMES: tuple[str, ...] = ("bash", "view", "search")

# what each edit command needs beyond command and path; "a|b" means either of them
EDIT_COMMAND_NEEDS: dict[str, tuple[str, ...]] = {
    "create": ("file_text",),
    "str_replace": ("old_str",),
    "insert": ("insert_line", "insert_text|new_str"),
    "undo": (),
}

_BY_NAME = {tool["name"]: tool for tool in TOOLS}


class ArgumentError(ValueError):
    """A tool call that does not fit the tool's schema; the message is for the model."""


def tools_for(names: tuple[str, ...] | list[str]) -> list[dict[str, Any]]:
    """Deep copies of the named tools, in the order given (a caller may change them freely)."""
    unknown = [name for name in names if name not in _BY_NAME]
    if unknown:
        raise KeyError(f"unknown tools {unknown}; the tools are {list(TOOL_NAMES)}")
    return [copy.deepcopy(_BY_NAME[name]) for name in names]


def setup_agent_tools() -> list[dict[str, Any]]:
    """The tools the environment-setup agent gets: bash, view and search."""
    return tools_for(SETUP_AGENT_TOOL_NAMES)


def validate_arguments(name: str, arguments: Any) -> dict[str, Any]:
    """``arguments`` checked against the tool's schema, with integers given as text or as
    whole floats (a common slip) turned into ints. Raises :class:`ArgumentError`."""
    tool = _BY_NAME.get(name)
    if tool is None:
        raise ArgumentError(
            f"unknown tool {name!r}; the tools are: {', '.join(TOOL_NAMES)}"
            if name
            else f"the tool call has no name; the tools are: {', '.join(TOOL_NAMES)}"
        )
    schema = tool["input_schema"]
    if not isinstance(arguments, dict):
        raise ArgumentError(
            f"{name}: arguments must be a JSON object such as {_example(name)}, "
            f"not {type(arguments).__name__}"
        )
    properties: dict[str, Any] = schema["properties"]
    problems = []
    missing = [field for field in schema["required"] if field not in arguments]
    if missing:
        problems.append(
            f"missing required argument{'s' if len(missing) > 1 else ''} "
            + ", ".join(repr(m) for m in missing)
        )
    extra = sorted(set(arguments) - set(properties))
    if extra:
        problems.append(
            f"unknown argument{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))}"
        )
    checked: dict[str, Any] = {}
    for field, value in arguments.items():
        if field not in properties:
            continue
        try:
            checked[field] = _check(value, properties[field], field)
        except ArgumentError as exc:
            problems.append(str(exc))
    if not problems and name == "edit":
        lacking = [
            need.split("|")[0]
            for need in EDIT_COMMAND_NEEDS[checked["command"]]
            if not any(option in checked for option in need.split("|"))
        ]
        if lacking:
            problems.append(f"{checked['command']} needs {' and '.join(map(repr, lacking))}")
    if problems:
        raise ArgumentError(f"{name}: " + "; ".join(problems) + f". {_signature(name)}")
    return checked


def _check(value: Any, schema: dict[str, Any], where: str) -> Any:
    kind = schema.get("type")
    if kind == "string":
        if not isinstance(value, str):
            raise ArgumentError(f"{where!r} must be a string, not {_json_type(value)}")
    elif kind == "integer":
        value = _as_int(value, where)
    elif kind == "boolean":
        if not isinstance(value, bool):
            raise ArgumentError(f"{where!r} must be true or false, not {_json_type(value)}")
    elif kind == "array":
        if not isinstance(value, list):
            raise ArgumentError(f"{where!r} must be an array, not {_json_type(value)}")
        low, high = schema.get("minItems"), schema.get("maxItems")
        if (low is not None and len(value) < low) or (high is not None and len(value) > high):
            size = f"exactly {low}" if low == high else f"{low} to {high}"
            raise ArgumentError(f"{where!r} must have {size} items, not {len(value)}")
        items = schema.get("items", {})
        value = [_check(item, items, f"{where}[{i}]") for i, item in enumerate(value)]
    if "enum" in schema and value not in schema["enum"]:
        raise ArgumentError(
            f"{where!r} must be one of {', '.join(map(repr, schema['enum']))}, not {value!r}"
        )
    if "minimum" in schema and value < schema["minimum"]:
        raise ArgumentError(f"{where!r} must be at least {schema['minimum']}, not {value}")
    if "maximum" in schema and value > schema["maximum"]:
        raise ArgumentError(f"{where!r} must be at most {schema['maximum']}, not {value}")
    return value


def _as_int(value: Any, where: str) -> int:
    if isinstance(value, bool):
        raise ArgumentError(f"{where!r} must be an integer, not a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value.strip())
    raise ArgumentError(f"{where!r} must be an integer, not {_json_type(value)} {value!r}")


def _json_type(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    names.update({list: "an array", dict: "an object", type(None): "null"})
    return names.get(type(value), type(value).__name__)


def _signature(name: str) -> str:
    schema = _BY_NAME[name]["input_schema"]
    parts = []
    for field, spec in schema["properties"].items():
        kind = spec.get("type", "any")
        if kind == "array":
            kind = "[" + ", ".join([spec["items"]["type"]] * spec["minItems"]) + "]"
        if "enum" in spec:
            kind = "|".join(spec["enum"])
        parts.append(f"{field}: {kind}" + ("" if field in schema["required"] else " (optional)"))
    return f"{name} takes {{{', '.join(parts)}}}, e.g. {_example(name)}"


def _example(name: str) -> str:
    return {
        "bash": '{"command": "ls -la"}',
        "view": f'{{"path": "{TESTBED}/setup.py", "view_range": [1, 40]}}',
        "edit": f'{{"command": "str_replace", "path": "{TESTBED}/x.py", "old_str": "a = 1", '
        '"new_str": "a = 2"}',
        "search": '{"pattern": "def main", "glob": "*.py"}',
    }[name]
