"""The tool schemas, the host-side argument check and the in-container program's source."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from orchestrator.tools.tools_host import cap_output, tools_source
from sandbox_tools import (
    SETUP_AGENT_TOOL_NAMES,
    TOOL_NAMES,
    TOOLS,
    ArgumentError,
    setup_agent_tools,
    tools_for,
    validate_arguments,
)

jsonschema = pytest.importorskip("jsonschema")

TOOLS_FILE = Path(__file__).resolve().parents[1] / "sandbox_tools" / "tools.py"

GOOD = [
    ("bash", {"command": "ls"}),
    ("bash", {"command": "sleep 5", "timeout": 10}),
    ("view", {"path": "/testbed"}),
    ("view", {"path": "a.py", "view_range": [1, -1]}),
    ("edit", {"command": "create", "path": "a.py", "file_text": ""}),
    ("edit", {"command": "str_replace", "path": "a.py", "old_str": "a", "new_str": "b"}),
    ("edit", {"command": "insert", "path": "a.py", "insert_line": 0, "insert_text": "x"}),
    ("edit", {"command": "undo", "path": "a.py"}),
    ("search", {"pattern": "x", "path": "/testbed", "glob": "*.py", "max_results": 5}),
    ("search", {"pattern": "x", "case_insensitive": True}),
]
BAD = [
    ("bash", {}, "missing required argument 'command'"),
    ("bash", {"command": 5}, "'command': Input should be a valid string (got 5)"),
    ("bash", {"command": "ls", "timeout": 0}, "'timeout': Input should be greater than or equal"),
    ("bash", {"command": "ls", "timeout": True}, "integer, not a boolean (got true)"),
    ("bash", {"command": "ls", "timeout": None}, "'timeout': Input should be a valid integer"),
    ("bash", {"command": "ls", "description": "list"}, "unknown argument 'description'"),
    ("view", {"path": "a", "view_range": [1]}, "'view_range': List should have at least 2"),
    ("view", {"path": "a", "view_range": [1, "x"]}, "'view_range[1]': Input should be a valid"),
    ("edit", {"command": "rename", "path": "a"}, "'insert' or 'undo' (got \"rename\")"),
    ("edit", {"path": "a"}, "missing required argument 'command'"),
    ("search", {"pattern": "x", "max_results": 5000}, "less than or equal to 1000 (got 5000)"),
    ("search", {"pattern": "x", "case_insensitive": "yes"}, "Input should be a valid boolean"),
]  # fmt: skip


def test_every_tool_has_a_name_a_description_and_a_valid_json_schema():
    assert len(set(TOOL_NAMES)) == len(TOOLS) == 4
    for tool in TOOLS:
        assert set(tool) == {"name", "description", "input_schema"}
        assert len(tool["description"]) > 200
        schema = tool["input_schema"]
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"
        assert set(schema["required"]) <= set(schema["properties"])
        for name, spec in schema["properties"].items():
            assert spec.get("description"), f"{tool['name']}.{name} has no description"


@pytest.mark.parametrize(("name", "arguments"), GOOD)
def test_good_arguments_pass_both_checks(name, arguments):
    schema = tools_for([name])[0]["input_schema"]
    jsonschema.validate(arguments, schema)
    assert validate_arguments(name, arguments) == arguments


@pytest.mark.parametrize(("name", "arguments", "message"), BAD)
def test_bad_arguments_fail_both_checks_with_a_message(name, arguments, message):
    schema = tools_for([name])[0]["input_schema"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(arguments, schema)
    with pytest.raises(ArgumentError, match="^" + name + ": ") as caught:
        validate_arguments(name, arguments)
    assert message in str(caught.value)
    assert f"{name} takes {{" in str(caught.value)


def test_edit_commands_need_their_own_arguments():
    with pytest.raises(ArgumentError, match="str_replace needs 'old_str'"):
        validate_arguments("edit", {"command": "str_replace", "path": "a"})
    with pytest.raises(ArgumentError, match="insert needs 'insert_line' and 'insert_text'"):
        validate_arguments("edit", {"command": "insert", "path": "a"})
    accepted = {"command": "insert", "path": "a", "insert_line": 1, "new_str": "x"}
    assert validate_arguments("edit", accepted) == accepted


def test_unknown_tool_and_non_object_arguments():
    with pytest.raises(ArgumentError, match="unknown tool 'shell'; the tools are: bash, view"):
        validate_arguments("shell", {})
    with pytest.raises(ArgumentError, match="arguments must be a JSON object"):
        validate_arguments("bash", "ls -la")


def test_integers_sent_as_text_or_whole_floats_are_converted():
    checked = validate_arguments("view", {"path": "a", "view_range": ["3", 9.0]})
    assert checked["view_range"] == [3, 9]
    with pytest.raises(ArgumentError):
        validate_arguments("view", {"path": "a", "view_range": [1.5, 2]})


def test_setup_agent_subset_is_a_copy():
    tools = setup_agent_tools()
    assert [t["name"] for t in tools] == list(SETUP_AGENT_TOOL_NAMES) == ["bash", "view", "search"]
    tools[0]["description"] = "changed"
    assert TOOLS[0]["description"] != "changed"
    with pytest.raises(KeyError, match="unknown tools"):
        tools_for(["bash", "ls"])


def test_tools_program_is_python39_syntax_and_stdlib_only():
    source = TOOLS_FILE.read_text()
    assert tools_source() == TOOLS_FILE.read_bytes()
    tree = ast.parse(source, feature_version=(3, 9))
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "the program is copied alone: no relative imports"
            modules.add(node.module.split(".")[0])
        assert not isinstance(node, ast.Match)
    # its one companion, copied beside it: the container contract (the host's package path,
    # else the copy's module name)
    modules -= {"sandbox_tools", "contract"}
    assert modules - {"__future__"} <= set(sys.stdlib_module_names)


def test_cap_output_keeps_start_and_end():
    text = "".join(f"line {i}\n" for i in range(1000))
    capped, cut = cap_output(text, 500)
    assert cut
    assert capped.startswith("line 0\nline 1\n")
    assert capped.endswith("line 999\n")
    assert "output cut:" in capped and len(capped) < 700
    assert cap_output("short", 500) == ("short", False)


def test_the_published_schema_is_the_models_without_titles_or_nulls():
    from sandbox_tools.schemas import ARGUMENTS

    for tool in TOOLS:
        model, schema = ARGUMENTS[tool["name"]], tool["input_schema"]
        assert list(schema["properties"]) == list(model.model_fields)
        required = [name for name, field in model.model_fields.items() if field.is_required()]
        assert schema["required"] == required and schema["additionalProperties"] is False
        text = json.dumps(schema)
        assert '"title"' not in text and "null" not in text and "anyOf" not in text
