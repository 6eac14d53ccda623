"""The LLM setup agent against a local fake of the Messages API (the real SDK talks to it).

Pure tests drive the loop with plain functions as tools; container tests let the scripted
"model" build a real virtual environment in the base image.
"""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import pytest

from orchestrator.anthropic_retry import RetryPolicy
from orchestrator.errors import UserError
from orchestrator.settings import Settings, SetupAgentConfig
from orchestrator.setup.agent.setup_agent import SetupAgent
from orchestrator.setup.agent.setup_llm import (
    activate_script,
    check_llm_settings,
    make_client,
    run_llm_setup,
)
from orchestrator.setup.agent.setup_log import SetupLog
from orchestrator.setup.agent.setup_models import (
    ACTIVATE_PATH,
    AgentLimits,
    FinishArgs,
    FinishCheck,
    LlmSetupResult,
    SetupFacts,
)
from orchestrator.tools.tool_protocol import ToolCall, ToolResult

from .fake_anthropic import (
    FORBIDDEN,
    OVERLOADED,
    UNAUTHORIZED,
    Failure,
    FakeAnthropic,
    Reply,
    bash,
    text,
    tool_use,
)

FAST_RETRY = RetryPolicy(attempts=4, initial_wait=0.01, max_wait=0.05)
LIMITS = AgentLimits(max_turns=10, max_tokens=100_000, wall_time=60)


@pytest.fixture(autouse=True)
def _no_ambient_config(monkeypatch, tmp_path):
    """Settings come from the test only: no swe-green.toml, no key in the environment."""
    monkeypatch.setenv("SWE_GREEN_CONFIG", str(tmp_path / "absent.toml"))
    for name in ("ANTHROPIC_API_KEY", "SWE_GREEN_ANTHROPIC_API_KEY", "SWE_GREEN_SETUP_STRATEGY"):
        monkeypatch.delenv(name, raising=False)


def finish(**overrides: object) -> Reply:
    arguments = {
        "python_version": "3.11",
        "venv_path": "/opt/swe/venv",
        "test_command": "python -m unittest -v",
        "install_commands": ["python3 -m venv /opt/swe/venv"],
        **overrides,
    }
    return Reply([text("Done."), tool_use("finish", arguments)])


class Tools:
    """Stands in for the sandbox: answers every call with ``outputs`` in turn."""

    def __init__(self, *outputs: ToolResult) -> None:
        self.outputs = list(outputs)
        self.calls: list[tuple[ToolCall, float]] = []
        self.finishes: list[FinishArgs] = []
        self.verdicts: list[FinishCheck] = []

    def execute(self, call: ToolCall, timeout: float) -> ToolResult:
        self.calls.append((call, timeout))
        template = self.outputs.pop(0) if self.outputs else ToolResult(id="", output="ok")
        return template.model_copy(update={"id": call.id})

    def complete(self, args: FinishArgs) -> FinishCheck:
        self.finishes.append(args)
        if self.verdicts:
            return self.verdicts.pop(0)
        return FinishCheck(ok=True, python_version="3.11.2")


def run_agent(
    fake: FakeAnthropic,
    tools: Tools,
    tmp_path: Path,
    limits: AgentLimits = LIMITS,
    retry: RetryPolicy = FAST_RETRY,
) -> LlmSetupResult:
    log = SetupLog(tmp_path / "logs")
    try:
        agent = SetupAgent(
            fake.client(),
            model="claude-test",
            tools=[{"name": "bash", "description": "run", "input_schema": {"type": "object"}}],
            execute=tools.execute,
            complete=tools.complete,
            limits=limits,
            log=log,
            retry=retry,
        )
        return agent.run("Set up the environment.")
    finally:
        log.close()


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# ------------------------------------------------------------------------- settings


def test_llm_strategy_without_a_key_is_a_user_error():
    with pytest.raises(UserError) as caught:
        check_llm_settings(Settings(setup_strategy="llm"))
    message = str(caught.value)
    assert "\n" not in message
    assert "ANTHROPIC_API_KEY" in message


def test_llm_strategy_with_a_key_from_settings_or_the_environment_is_fine(monkeypatch):
    check_llm_settings(Settings(setup_strategy="llm", anthropic_api_key="sk-test"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env")
    check_llm_settings(Settings(setup_strategy="llm"))


def test_auto_and_recipe_strategies_need_no_key():
    check_llm_settings(Settings(setup_strategy="auto"))
    check_llm_settings(Settings(setup_strategy="recipe"))


def test_client_from_settings_uses_the_base_url_and_no_sdk_retries():
    with pytest.raises(UserError):
        make_client(Settings().setup_agent)
    with FakeAnthropic([OVERLOADED, Reply([text("hi")])]) as fake:
        client = make_client(
            Settings(anthropic_api_key="k", anthropic_base_url=fake.url).setup_agent
        )
        assert client.max_retries == 0
        with pytest.raises(anthropic.InternalServerError):
            client.messages.create(model="m", max_tokens=5, messages=[])
        assert len(fake.requests) == 1


def test_a_non_positive_limit_is_a_user_error():
    from orchestrator.settings import load_settings

    # range-checked when the settings are loaded, before any run starts
    with pytest.raises(UserError, match="setup_max_turns"):
        load_settings(anthropic_api_key="k", setup_max_turns=0)


# ------------------------------------------------------------------------- the loop


def test_tool_results_go_back_with_the_tool_use_id_and_output(tmp_path):
    script = [
        Reply([text("Looking."), tool_use("bash", {"command": "ls"}, id="toolu_a")]),
        Reply(
            [
                tool_use("bash", {"command": "false"}, id="toolu_b"),
                tool_use("bash", {"command": "cat x"}, id="toolu_c"),
            ]
        ),
        finish(),
    ]
    tools = Tools(
        ToolResult(id="", output="setup.py\n", exit_code=0),
        ToolResult(id="", output="", exit_code=1),
        ToolResult(id="", output="boom", exit_code=None, error=True),
    )
    with FakeAnthropic(script) as fake:
        result = run_agent(fake, tools, tmp_path)

    assert result.success, result.failure_reason
    assert [call.id for call, _ in tools.calls] == ["toolu_a", "toolu_b", "toolu_c"]
    assert tools.calls[0][0].arguments == {"command": "ls"}
    assert len(fake.requests) == 3
    first = fake.tool_results(1)
    assert [(r["tool_use_id"], r["content"], r["is_error"]) for r in first] == [
        ("toolu_a", "setup.py\n", False)
    ]
    second = fake.tool_results(2)
    assert [r["tool_use_id"] for r in second] == ["toolu_b", "toolu_c"]
    assert second[0]["content"] == "(no output)\n[exit code 1]"
    assert (second[1]["content"], second[1]["is_error"]) == ("boom", True)
    # the assistant turn is sent back verbatim, and finish and give_up are offered as tools
    assert fake.requests[1]["messages"][1]["content"][1]["id"] == "toolu_a"
    assert {t["name"] for t in fake.requests[0]["tools"]} == {"bash", "finish", "give_up"}
    assert fake.requests[0]["model"] == "claude-test"


def test_finish_result_carries_the_agent_report_and_a_stable_key(tmp_path):
    script = [finish(install_commands=["a", "b"], env={"LANG": "C.UTF-8"}, notes="easy")]
    with FakeAnthropic(script) as fake:
        result = run_agent(fake, Tools(), tmp_path)
    assert result.success
    assert result.python_version == "3.11.2"  # the version the check saw, not the claim
    assert (result.test_command, result.install_commands) == ("python -m unittest -v", ["a", "b"])
    assert result.env == {"LANG": "C.UTF-8"} and result.notes == "easy"
    same = result.model_copy(update={"turns": 99, "duration": 5.0, "notes": "other"})
    assert same.key() == result.key()
    changed = result.model_copy(update={"install_commands": ["a", "b", "c"]})
    assert changed.key() != result.key()
    assert result.model_copy(update={"python_version": "3.9.18"}).key() != result.key()


def test_turns_and_tokens_are_summed_over_turns(tmp_path):
    script = [
        Reply([tool_use("bash", {"command": "a"})], input_tokens=100, output_tokens=10),
        Reply([text("thinking aloud")], input_tokens=200, output_tokens=20, cache_read_tokens=50),
        Reply(finish().content, input_tokens=300, output_tokens=30),
    ]
    with FakeAnthropic(script) as fake:
        result = run_agent(fake, Tools(), tmp_path)
    assert result.success
    assert (result.turns, result.input_tokens, result.output_tokens) == (3, 650, 60)
    # a turn without tool use is answered with a nudge to go on
    assert "finish" in fake.requests[2]["messages"][-1]["content"]


def test_token_limit_stops_the_agent(tmp_path):
    limits = AgentLimits(max_turns=50, max_tokens=250, wall_time=60)
    with FakeAnthropic([bash("true")], repeat_last=True) as fake:
        result = run_agent(fake, Tools(), tmp_path, limits=limits)
    assert not result.success
    assert result.failure_kind == "token_limit"
    assert "token limit (250)" in result.failure_reason
    assert result.turns == 3 and len(fake.requests) == 3  # 120, 240, 360 tokens


def test_turn_limit_stops_the_agent(tmp_path):
    limits = AgentLimits(max_turns=2, max_tokens=100_000, wall_time=60)
    with FakeAnthropic([bash("true")], repeat_last=True) as fake:
        result = run_agent(fake, Tools(), tmp_path, limits=limits)
    assert (result.success, result.failure_kind, result.turns) == (False, "turn_limit", 2)
    assert "turn limit (2 turns)" in result.failure_reason
    assert len(fake.requests) == 2


def test_rejected_finish_is_explained_to_the_model_which_can_try_again(tmp_path):
    tools = Tools()
    tools.verdicts = [FinishCheck(ok=False, message="/opt/swe/venv/bin/activate does not exist")]
    script = [finish(), bash("python3 -m venv /opt/swe/venv"), finish()]
    with FakeAnthropic(script) as fake:
        result = run_agent(fake, tools, tmp_path)
    assert result.success and result.turns == 3
    (feedback,) = fake.tool_results(1)
    assert feedback["is_error"] is True
    assert "bin/activate does not exist" in feedback["content"]
    assert len(tools.finishes) == 2


def test_finish_with_missing_arguments_is_rejected_without_checking(tmp_path):
    script = [Reply([tool_use("finish", {"python_version": "3.11"})]), finish()]
    tools = Tools()
    with FakeAnthropic(script) as fake:
        result = run_agent(fake, tools, tmp_path)
    assert result.success
    (feedback,) = fake.tool_results(1)
    assert (
        "invalid finish arguments" in feedback["content"] and "test_command" in feedback["content"]
    )
    assert len(tools.finishes) == 1


def test_give_up_is_a_failure_with_the_agents_reason(tmp_path):
    script = [Reply([tool_use("give_up", {"reason": "needs Python 2.7"})])]
    with FakeAnthropic(script) as fake:
        result = run_agent(fake, Tools(), tmp_path)
    assert (result.success, result.failure_kind) == (False, "gave_up")
    assert "needs Python 2.7" in result.failure_reason


# ------------------------------------------------------------------------- API errors


def test_overload_and_rate_limit_are_retried_with_the_same_request(tmp_path):
    rate_limited = Failure(429, "rate_limit_error", "slow down", {"retry-after": "0"})
    script = [OVERLOADED, rate_limited, bash("ls"), OVERLOADED, finish()]
    with FakeAnthropic(script) as fake:
        result = run_agent(fake, Tools(), tmp_path)
    assert result.success, result.failure_reason
    assert result.turns == 2  # retries are not turns
    assert len(fake.requests) == 5
    assert fake.requests[0] == fake.requests[1] == fake.requests[2]
    assert fake.requests[3] == fake.requests[4]
    retries = [r for r in read_log(result.log_path) if r["event"] == "api_retry"]
    assert [r["attempt"] for r in retries] == [1, 2, 1]
    assert "529" in retries[0]["error"] and "overloaded_error" in retries[0]["error"]


def test_a_persistent_overload_fails_after_the_configured_attempts(tmp_path):
    with FakeAnthropic([OVERLOADED], repeat_last=True) as fake:
        result = run_agent(fake, Tools(), tmp_path)
    assert (result.success, result.failure_kind) == (False, "api_error")
    assert "Overloaded" in result.failure_reason and "4 attempts" in result.failure_reason
    assert len(fake.requests) == FAST_RETRY.attempts


@pytest.mark.parametrize("refusal", [UNAUTHORIZED, FORBIDDEN], ids=["401", "403"])
def test_auth_errors_fail_at_once_without_retries(tmp_path, refusal):
    with FakeAnthropic([refusal, finish()]) as fake:
        result = run_agent(fake, Tools(), tmp_path)
    assert (result.success, result.failure_kind, result.turns) == (False, "auth", 0)
    assert "API key" in result.failure_reason and str(refusal.status) in result.failure_reason
    assert len(fake.requests) == 1


def test_a_bad_request_is_not_retried(tmp_path):
    too_long = Failure(400, "invalid_request_error", "prompt is too long")
    with FakeAnthropic([too_long, finish()]) as fake:
        result = run_agent(fake, Tools(), tmp_path)
    assert (result.success, result.failure_kind) == (False, "api_error")
    assert "prompt is too long" in result.failure_reason
    assert len(fake.requests) == 1


def test_a_model_slower_than_the_wall_time_fails_with_timeout(tmp_path):
    limits = AgentLimits(max_turns=10, max_tokens=100_000, wall_time=1.0)
    with FakeAnthropic([Reply(finish().content, delay=30)]) as fake:
        result = run_agent(fake, Tools(), tmp_path, limits=limits)
    assert (result.success, result.failure_kind) == (False, "timeout")
    assert "wall time (1 s)" in result.failure_reason


# ------------------------------------------------------------------------- the log


def test_log_has_one_json_object_per_turn_tool_call_and_result(tmp_path):
    big = "x" * 50_000
    script = [bash("yes x | head -c 50000", id="toolu_big"), finish()]
    with FakeAnthropic(script) as fake:
        result = run_agent(fake, Tools(ToolResult(id="", output=big, exit_code=0)), tmp_path)
    assert result.log_path == tmp_path / "logs" / "setup.log"
    records = read_log(result.log_path)
    assert [r["event"] for r in records] == [
        "start",
        "turn",
        "tool_call",
        "turn",
        "finish",
        "result",
    ]
    assert all(r["ts"].endswith("+00:00") for r in records)
    start, turn, call, _, done, final = records
    assert start["model"] == "claude-test" and start["limits"]["max_turns"] == 10
    assert (turn["turn"], turn["input_tokens"], turn["output_tokens"]) == (1, 100, 20)
    assert turn["tool_calls"] == ["bash"] and turn["stop_reason"] == "tool_use"
    assert (call["id"], call["name"], call["exit_code"]) == ("toolu_big", "bash", 0)
    assert call["arguments"] == {"command": "yes x | head -c 50000"}
    assert len(call["output"]) < 5_000 and "more chars" in call["output"]
    assert done["ok"] is True
    assert final["success"] is True
    assert (final["turns"], final["input_tokens"], final["output_tokens"]) == (2, 200, 40)
    # the model itself got the whole output (the sandbox tool caps it, not the log)
    assert fake.tool_results(1)[0]["content"] == big


def test_activate_script_quotes_values_and_ends_in_the_testbed():
    script = activate_script("/opt/swe/venv/", {"B": "two words", "A": "it's"})
    assert script.splitlines()[1:] == [
        "source /opt/swe/venv/bin/activate",
        "export A='it'\"'\"'s'",
        "export B='two words'",
        "cd /testbed",
    ]


# ------------------------------------------------------------------------- real containers

TINY_PYPROJECT = '[project]\nname = "tinypkg"\nversion = "0.1"\n'
TINY_TEST = """\
import unittest

from tinypkg import add


class AddTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(1, 2), 3)
"""
VENV = "python3 -m venv /opt/swe/venv"
INSTALL = (
    "cd /testbed && /opt/swe/venv/bin/pip install --no-index --no-build-isolation "
    "--no-use-pep517 -e ."
)
FACTS = SetupFacts(repo="demo/tinypkg", version="0.1", instance_id="demo__tinypkg-1")


@pytest.fixture
def testbed(make_sandbox, tmp_path):
    """A container whose /testbed holds a tiny package with one unittest test."""
    src = tmp_path / "testbed"
    (src / "tinypkg").mkdir(parents=True)
    (src / "tests").mkdir()
    (src / "pyproject.toml").write_text(TINY_PYPROJECT)
    (src / "setup.py").write_text("from setuptools import setup\n\nsetup()\n")
    (src / "tinypkg" / "__init__.py").write_text("def add(a, b):\n    return a + b\n")
    (src / "tests" / "__init__.py").write_text("")
    (src / "tests" / "test_add.py").write_text(TINY_TEST)
    sandbox = make_sandbox()
    sandbox.put_dir(src, "/testbed")
    return sandbox


def container_settings(**limits: object) -> SetupAgentConfig:
    return Settings(anthropic_api_key="test", setup_model="claude-test", **limits).setup_agent


@pytest.mark.container
def test_scripted_agent_builds_a_working_environment(testbed, tmp_path):
    script = [
        bash("cat /testbed/pyproject.toml", id="toolu_read"),
        OVERLOADED,
        bash(VENV, id="toolu_venv"),
        bash(INSTALL, id="toolu_install"),
        finish(install_commands=[VENV, INSTALL], env={"PYTHONDONTWRITEBYTECODE": "1"}),
    ]
    with FakeAnthropic(script) as fake:
        result = run_llm_setup(
            testbed, FACTS, container_settings(), tmp_path, client=fake.client(), retry=FAST_RETRY
        )

    assert result.success, result.failure_reason
    assert result.python_version.startswith("3.11.")
    assert result.turns == 4 and len(fake.requests) == 5
    # the first message tells the model about the instance and the interpreters it has
    opening = fake.requests[0]["messages"][0]["content"]
    assert "demo/tinypkg" in opening and "python3.11" in opening
    # tool results came back from the real container, matched to their calls
    (read,) = fake.tool_results(1)
    assert read["tool_use_id"] == "toolu_read" and 'name = "tinypkg"' in read["content"]
    (install,) = fake.tool_results(4)
    assert install["tool_use_id"] == "toolu_install"
    assert "Successfully installed tinypkg" in install["content"], install["content"]

    run = testbed.exec(f"source {ACTIVATE_PATH} && pwd && {result.test_command} 2>&1", timeout=60)
    assert run.ok, run.output
    assert run.stdout.startswith("/testbed\n")
    assert "test_add (tests.test_add.AddTest" in run.stdout and "OK" in run.stdout
    env = testbed.exec(f"source {ACTIVATE_PATH} && echo $PYTHONDONTWRITEBYTECODE; which python")
    assert env.stdout.split() == ["1", "/opt/swe/venv/bin/python"]
    events = [r["event"] for r in read_log(result.log_path)]
    assert events.count("tool_call") == 3 and events.count("api_retry") == 1


@pytest.mark.container
def test_finish_without_a_venv_is_rejected_in_the_container(testbed, tmp_path):
    script = [finish(), bash(VENV), finish(python_version="3.9"), bash("true")]
    with FakeAnthropic(script) as fake:
        result = run_llm_setup(
            testbed, FACTS, container_settings(setup_max_turns=4), tmp_path, client=fake.client()
        )
    assert (result.success, result.failure_kind) == (False, "turn_limit")
    assert "does not exist" in fake.tool_results(1)[0]["content"]
    assert "runs 3.11" in fake.tool_results(3)[0]["content"]


@pytest.mark.container
def test_turn_limit_in_a_container(testbed, tmp_path):
    with FakeAnthropic([bash("true")], repeat_last=True) as fake:
        result = run_llm_setup(
            testbed, FACTS, container_settings(setup_max_turns=2), tmp_path, client=fake.client()
        )
    assert (result.success, result.failure_kind, result.turns) == (False, "turn_limit", 2)
    assert "turn limit" in result.failure_reason
    assert testbed.exec(f"test -e {ACTIVATE_PATH}").exit_code == 1


@pytest.mark.container
def test_auth_error_in_a_container_fails_without_retries(testbed, tmp_path):
    with FakeAnthropic([UNAUTHORIZED], repeat_last=True) as fake:
        result = run_llm_setup(
            testbed, FACTS, container_settings(), tmp_path, client=fake.client(), retry=FAST_RETRY
        )
    assert (result.success, result.failure_kind) == (False, "auth")
    assert len(fake.requests) == 1


@pytest.mark.container
def test_an_agent_that_never_finishes_runs_out_of_wall_time(testbed, tmp_path):
    with FakeAnthropic([bash("sleep 1")], repeat_last=True) as fake:
        result = run_llm_setup(
            testbed, FACTS, container_settings(setup_timeout=4), tmp_path, client=fake.client()
        )
    assert (result.success, result.failure_kind) == (False, "timeout")
    assert "wall time (4 s)" in result.failure_reason
    assert result.turns >= 2
