"""The setup agent's data: its limits, prompt, extra tools, and the result it gives."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from orchestrator.models import Instance
from orchestrator.settings import SetupAgentConfig
from sandbox_tools.contract import ACTIVATE, TESTBED, VENV

VENV_PATH = VENV
ACTIVATE_PATH = ACTIVATE
RESPONSE_MAX_TOKENS = 8192
TOOL_TIMEOUT = 900.0
TOOL_OUTPUT_LIMIT = 30_000

FailureKind = Literal[
    "", "auth", "turn_limit", "token_limit", "timeout", "api_error", "gave_up", "sandbox"
]

FINISH_TOOL: dict[str, Any] = {
    "name": "finish",
    "description": (
        "Call once the environment works: the package imports and its tests run. The harness "
        f"then writes {ACTIVATE} (activates venv_path, exports env, cd {TESTBED}) and "
        "checks it; if the check fails you get the reason back and can fix it."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "python_version": {
                "type": "string",
                "description": "Version of the venv's interpreter, e.g. 3.11 or 3.9.18.",
            },
            "venv_path": {
                "type": "string",
                "description": f"The virtual environment's directory (normally {VENV_PATH}).",
            },
            "test_command": {
                "type": "string",
                "description": f"Command that runs the tests from {TESTBED} with the venv active, "
                "e.g. `pytest -rA`; test files are appended to it.",
            },
            "install_commands": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Every command that built the environment, in order, so that "
                "running them in a fresh container reproduces it.",
            },
            "env": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Environment variables the tests need (exported by activate.sh).",
            },
            "notes": {"type": "string", "description": "Anything a person should know."},
        },
        "required": ["python_version", "venv_path", "test_command", "install_commands"],
    },
}

GIVE_UP_TOOL: dict[str, Any] = {
    "name": "give_up",
    "description": "Call when the environment cannot be built here; say why.",
    "input_schema": {
        "type": "object",
        "properties": {"reason": {"type": "string"}},
        "required": ["reason"],
    },
}

SYSTEM_PROMPT = f"""\
You set up the Python environment in which a repository's test suite will run. You work in a \
Debian container through tools. The repository is checked out at {TESTBED}; do not change its \
tracked files.

1. Read the packaging files (pyproject.toml, setup.py, setup.cfg, tox.ini, requirements*.txt, \
CI configuration) to find which Python versions the project supports at this commit and what \
its tests need.
2. Choose an interpreter. The container has no internet access except the Python Package \
Index: `uv python install` and pyenv downloads fail, so use an interpreter already in the \
container (listed in the first message), the newest one the project supports.
3. Create a virtual environment at {VENV_PATH} with it (`python3 -m venv {VENV_PATH}` or \
`uv venv`).
4. Install pip, setuptools and wheel, then the package in editable mode with its test extras \
(e.g. `{VENV_PATH}/bin/pip install -e ".[test]"`), plus whatever else the tests need (pytest, \
test requirements files). When the newest release of a dependency breaks this old code, pin \
a version from the time of the commit.
5. Check that the tests are collected and run (a few quick test files are enough).
6. Call `finish`. If the environment cannot be built, call `give_up` with the reason.

The bash tool keeps the working directory and exported variables between calls, but write \
install commands with absolute paths (such as {VENV_PATH}/bin/pip) so that they replay in a \
fresh shell. Long installs may need a larger `timeout` argument. Keep output short (-q, tail). \
Do not write {ACTIVATE_PATH} yourself; `finish` writes it."""

NUDGE = "Continue with the tools. Call finish when the environment works, or give_up."


class SetupFacts(BaseModel):
    """What the agent is told about the checkout in /testbed."""

    repo: str
    version: str = ""
    instance_id: str = ""
    environment_setup_commit: str = ""
    # the inferred environment the agent starts from, and how it failed (strategy auto)
    starting_point: str = ""

    @classmethod
    def from_instance(cls, instance: Instance, starting_point: str = "") -> SetupFacts:
        return cls(
            repo=instance.repo,
            version=instance.version,
            instance_id=instance.instance_id,
            environment_setup_commit=instance.environment_setup_commit,
            starting_point=starting_point,
        )


class FinishArgs(BaseModel):
    """The arguments of the ``finish`` tool."""

    python_version: str
    venv_path: str = VENV_PATH
    test_command: str
    install_commands: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    notes: str = ""


class FinishCheck(BaseModel):
    """The harness's verdict on a ``finish`` call; ``message`` goes back to the model."""

    ok: bool
    python_version: str = ""
    message: str = ""


class AgentLimits(BaseModel):
    max_turns: int
    max_tokens: int
    wall_time: float
    tool_timeout: float = TOOL_TIMEOUT

    @classmethod
    def from_settings(
        cls, settings: SetupAgentConfig, tool_timeout: float = TOOL_TIMEOUT
    ) -> AgentLimits:
        return cls(
            max_turns=settings.setup_max_turns,
            max_tokens=settings.setup_max_tokens,
            wall_time=settings.setup_timeout,
            tool_timeout=tool_timeout,
        )


class LlmSetupResult(BaseModel):
    success: bool
    python_version: str = ""
    venv_path: str = ""
    test_command: str = ""
    install_commands: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    notes: str = ""
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    duration: float = 0.0
    failure_kind: FailureKind = ""
    failure_reason: str = ""
    log_path: Path | None = None

    def key(self) -> str:
        """A stable digest of what defines the built environment (for the environment cache)."""
        facts = {
            "strategy": "llm",
            "python_version": self.python_version,
            "venv_path": self.venv_path,
            "install_commands": self.install_commands,
            "env": self.env,
        }
        return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]
