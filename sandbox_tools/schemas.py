"""The sandbox tools as a model sees them: names, plain descriptions and arguments.

Each tool's arguments are a pydantic model; its JSON schema, generated from the model, is the
``input_schema`` of ``TOOLS``, in Anthropic's tool format (``name``, ``description``,
``input_schema``), which is also what the participant protocol sends. ``validate_arguments``
checks a call with the model on the host before anything runs in a container (the program in
the container, :mod:`sandbox_tools.tools`, is standard library only), and turns pydantic's
errors into the one message the model gets back.

Directory listing is not a separate tool: ``view`` on a directory lists it two levels deep.
"""

from __future__ import annotations

import copy
import json
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from sandbox_tools.contract import TESTBED

DEFAULT_TIMEOUT = 180
MAX_TIMEOUT = 3600
MAX_SEARCH_RESULTS = 1000


def _not_a_boolean(value: Any) -> Any:
    """JSON's true and false are not the integers 1 and 0 here (pydantic's lax mode says so)."""
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "Input should be a valid integer, not a boolean")
    return value


# an integer, also given as text ("30") or as a whole float (30.0), a common slip; not a boolean
Integer = Annotated[int, BeforeValidator(_not_a_boolean)]


# the default of an optional argument: left out of the call (an explicit null is refused), so
# absent from what validate_arguments returns
OMITTED: Any = None


class ToolArguments(BaseModel):
    """The arguments of one tool call: no others, none null (an optional one is left out)."""

    model_config = ConfigDict(extra="forbid")


class BashArguments(ToolArguments):
    command: str = Field(
        description="The command line, e.g. `python -m pytest tests/test_x.py -x -q`."
    )
    timeout: Integer = Field(
        OMITTED,
        ge=1,
        le=MAX_TIMEOUT,
        description=f"Seconds before the command is killed (default {DEFAULT_TIMEOUT}).",
    )


class ViewArguments(ToolArguments):
    path: str = Field(description=f"File or directory, e.g. {TESTBED}/src/pkg/module.py.")
    view_range: list[Integer] = Field(
        OMITTED,
        min_length=2,
        max_length=2,
        description="Optional [start, end] line range for a file, e.g. [100, 160].",
    )


# what each edit command needs beyond command and path; "a|b" means either of them
EDIT_COMMAND_NEEDS: dict[str, tuple[str, ...]] = {
    "create": ("file_text",),
    "str_replace": ("old_str",),
    "insert": ("insert_line", "insert_text|new_str"),
    "undo": (),
}


class EditArguments(ToolArguments):
    command: Literal["create", "str_replace", "insert", "undo"] = Field(description="What to do.")
    path: str = Field(description=f"The file, e.g. {TESTBED}/pkg/mod.py.")
    file_text: str = Field(OMITTED, description="create: the whole new content.")
    old_str: str = Field(
        OMITTED, description="str_replace: the exact text to replace (must occur once)."
    )
    new_str: str = Field(OMITTED, description="str_replace: the replacement text (default: empty).")
    insert_line: Integer = Field(
        OMITTED, ge=0, description="insert: the line after which to insert (0 = top of the file)."
    )
    insert_text: str = Field(
        OMITTED, description="insert: the text to insert (new_str is accepted too)."
    )

    @model_validator(mode="after")
    def _command_has_its_arguments(self) -> EditArguments:
        given = self.model_fields_set
        lacking = [
            need.split("|")[0]
            for need in EDIT_COMMAND_NEEDS[self.command]
            if not any(option in given for option in need.split("|"))
        ]
        if lacking:
            raise PydanticCustomError(
                "edit_command",
                "{command} needs {lacking}",
                {"command": self.command, "lacking": " and ".join(map(repr, lacking))},
            )
        return self


class SearchArguments(ToolArguments):
    pattern: str = Field(description=r"Regular expression, e.g. `def parse_\w+` or `class Foo\b`.")
    path: str = Field(OMITTED, description=f"Directory or file to search (default {TESTBED}).")
    glob: str = Field(OMITTED, description="Only files matching this, e.g. `*.py`.")
    case_insensitive: StrictBool = Field(OMITTED, description="Ignore case (default false).")
    max_results: Integer = Field(
        OMITTED,
        ge=1,
        le=MAX_SEARCH_RESULTS,
        description="How many matching lines to show at most (default 100).",
    )


BASH_DESCRIPTION = (
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
)

VIEW_DESCRIPTION = (
    "Show a text file with line numbers, or list a directory. For a file, pass view_range "
    "[start, end] (1-based, inclusive; end -1 means the end of the file) to see part of it; "
    "long files are cut with a marker telling which lines were left out. Bytes that are "
    "not UTF-8 are shown as U+FFFD; binary files are refused. For a directory, lists the "
    "files and subdirectories up to 2 levels deep (subdirectories end with '/'), leaving "
    f"out hidden ones (names starting with '.'). Relative paths are taken from {TESTBED}."
)

EDIT_DESCRIPTION = (
    "Change a text file. Commands: `create` writes file_text as the whole file (parent "
    "directories are created; an existing file is replaced); `str_replace` replaces "
    "old_str with new_str, where old_str must match the file exactly once, whitespace and "
    "indentation included (with no match or several matches nothing changes and the "
    "error says how many and where; omit new_str to delete old_str); `insert` inserts "
    "insert_text after line insert_line (0 inserts at the top); `undo` reverts the last "
    "change this tool made to the file (repeat to go further back). Edits made with bash "
    f"cannot be undone here. Relative paths are taken from {TESTBED}."
)

SEARCH_DESCRIPTION = (
    "Search files for a regular expression (Python `re` syntax) and list the matching "
    "lines as `path:line: text`. Searches a file, or every file under a directory "
    f"(default {TESTBED}), skipping hidden directories such as .git, __pycache__, binary "
    "files and files over 20 MB. Narrow it with glob (a file-name pattern such as `*.py`, "
    "or a path pattern relative to path such as `tests/*.py`). At most max_results "
    "matches are shown (default 100); the output says how many more there were."
)

ARGUMENTS: dict[str, type[ToolArguments]] = {
    "bash": BashArguments,
    "view": ViewArguments,
    "edit": EditArguments,
    "search": SearchArguments,
}
_DESCRIPTIONS = {
    "bash": BASH_DESCRIPTION,
    "view": VIEW_DESCRIPTION,
    "edit": EDIT_DESCRIPTION,
    "search": SEARCH_DESCRIPTION,
}


def input_schema(model: type[ToolArguments]) -> dict[str, Any]:
    """The JSON schema a model is shown for ``model``: pydantic's, without the titles it
    derives from the class and field names, and without the ``null`` default of an optional
    argument (which is left out, never sent as null)."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    for spec in schema["properties"].values():
        spec.pop("title", None)
        if spec.get("default", 0) is None:
            del spec["default"]
    return schema


TOOLS: list[dict[str, Any]] = [
    {"name": name, "description": _DESCRIPTIONS[name], "input_schema": input_schema(model)}
    for name, model in ARGUMENTS.items()
]
TOOL_NAMES: tuple[str, ...] = tuple(ARGUMENTS)
SETUP_AGENT_TOOL_NAMES: tuple[str, ...] = ("bash", "view", "search")

_BY_NAME = {tool["name"]: tool for tool in TOOLS}


class ArgumentError(ValueError):
    """A tool call that does not fit the tool's arguments; the message is for the model."""


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
    """``arguments`` validated by the tool's model: the arguments given, with integers given
    as text or as whole floats turned into ints. Raises :class:`ArgumentError` naming every
    problem, then the tool's arguments and an example."""
    model = ARGUMENTS.get(name)
    if model is None:
        raise ArgumentError(
            f"unknown tool {name!r}; the tools are: {', '.join(TOOL_NAMES)}"
            if name
            else f"the tool call has no name; the tools are: {', '.join(TOOL_NAMES)}"
        )
    if not isinstance(arguments, dict):
        raise ArgumentError(
            f"{name}: arguments must be a JSON object such as {_example(name)}, "
            f"not {type(arguments).__name__}"
        )
    try:
        checked = model.model_validate(arguments)
    except ValidationError as exc:
        problems = "; ".join(problem_texts(exc))
        raise ArgumentError(f"{name}: {problems}. {_signature(name)}") from None
    return checked.model_dump(exclude_unset=True)


def problem_texts(error: ValidationError) -> list[str]:
    """Pydantic's errors as short phrases: the missing arguments, the unknown ones, then each
    bad value with its place (``'view_range[1]'``) and what was given."""
    missing, unknown, values = [], [], []
    for problem in error.errors(include_url=False):
        where = _place(problem["loc"])
        if problem["type"] == "missing":
            missing.append(where)
        elif problem["type"] == "extra_forbidden":
            unknown.append(where)
        elif where:
            values.append(f"{where}: {problem['msg']} (got {_shown(problem['input'])})")
        else:
            values.append(problem["msg"])
    texts = []
    if missing:
        texts.append(
            f"missing required argument{'s' if len(missing) > 1 else ''} " + ", ".join(missing)
        )
    if unknown:
        texts.append(f"unknown argument{'s' if len(unknown) > 1 else ''} " + ", ".join(unknown))
    return texts + values


def _shown(value: Any, room: int = 80) -> str:
    """``value`` as the JSON the model sent, cut to ``room`` characters."""
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= room else text[: room - 1] + "…"


def _place(loc: tuple[int | str, ...]) -> str:
    """``('view_range', 1)`` as ``'view_range[1]'``; the whole call as ``''``."""
    if not loc:
        return ""
    return repr(str(loc[0]) + "".join(f"[{part}]" for part in loc[1:]))


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
