"""The swe-sandbox protocol end to end: the green agent's client against real A2A servers.

Participants run on 127.0.0.1: scripted ones in a thread of this process (inspectable), the
command line in a subprocess (to kill it mid-run), and an a2a-sdk 0.3 one in its own venv.
Tools run through a real runner: bash on the host in a temporary directory, or the sandbox
tools in a real container (``container`` tests).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from orchestrator.frontends.reference_participants import running
from orchestrator.frontends.reference_participants.scripted import Script, ScriptedParticipant
from orchestrator.models import Instance, Reason
from orchestrator.participant.client import (
    EndedBy,
    ParticipantLimits,
    ParticipantOutcome,
    run_participant,
)
from orchestrator.participant.transport import tls_context
from orchestrator.participant.wire import PROTOCOL, parse_tool_results, parse_turn
from orchestrator.patches.extract import extract_patch
from orchestrator.tools.tool_protocol import ToolCall, ToolResult

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
BASH_ONLY = [
    {
        "name": "bash",
        "description": "Run a shell command.",
        "input_schema": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    }
]
FAST = ParticipantLimits(max_tool_calls=20, tool_timeout=10, instance_timeout=60, reply_timeout=20)
DIFF = """\
diff --git a/hello.py b/hello.py
--- a/hello.py
+++ b/hello.py
@@ -1 +1 @@
-print("hello")
+print("hello, world")
"""


@pytest.fixture
def instance() -> Instance:
    return Instance(
        instance_id="demo__hello-1",
        repo="demo/hello",
        base_commit="0" * 40,
        environment_setup_commit="0" * 40,
        problem_statement="hello.py should greet the world.",
        hints_text="Look at hello.py.",
    )


class HostBash:
    """A real tool runner without a container: ``bash`` in a directory of the host."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.calls: list[tuple[ToolCall, float]] = []
        self.on_call: Any = None

    def __call__(self, call: ToolCall, timeout: float) -> ToolResult:
        self.calls.append((call, timeout))
        if self.on_call:
            self.on_call(len(self.calls))
        if call.name != "bash":
            return ToolResult(id=call.id, output=f"Unknown tool {call.name!r}.", error=True)
        command = call.arguments.get("command")
        if not isinstance(command, str):
            return ToolResult(id=call.id, output="Missing argument 'command'.", error=True)
        started = time.monotonic()
        try:
            done = subprocess.run(
                ["bash", "-c", command],
                cwd=self.root,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return ToolResult(
                id=call.id, output=f"timed out after {timeout:g} s", error=True, timed_out=True
            )
        return ToolResult(
            id=call.id,
            output=done.stdout + done.stderr,
            exit_code=done.returncode,
            duration=time.monotonic() - started,
        )


@pytest.fixture
def host_bash(tmp_path: Path) -> HostBash:
    root = tmp_path / "work"
    root.mkdir()
    (root / "hello.py").write_text('print("hello")\n')
    return HostBash(root)


def drive(
    url: str,
    instance: Instance,
    runner: Any,
    tmp_path: Path,
    limits: ParticipantLimits = FAST,
    tools: list[dict[str, Any]] | None = None,
) -> tuple[ParticipantOutcome, list[dict[str, Any]]]:
    transcript = tmp_path / "transcript.jsonl"
    outcome = asyncio.run(
        run_participant(
            url, instance, runner, limits, transcript, tools=BASH_ONLY if tools is None else tools
        )
    )
    events = [json.loads(line) for line in transcript.read_text().splitlines()]
    return outcome, events


def scripted(**script: Any) -> ScriptedParticipant:
    return ScriptedParticipant(Script.model_validate(script))


def outputs(participant: ScriptedParticipant, message: int) -> list[tuple[str, str]]:
    return [(r.id, r.output) for r in participant.received()[message].results]


# ---------------------------------------------------------------------- the wire format
def test_parse_turn_reads_calls_from_data_and_text_in_order():
    turn = parse_turn(
        [
            ("data", {"type": "tool_call", "id": "a", "name": "bash", "arguments": {"n": 1.0}}),
            (
                "text",
                json.dumps(
                    [
                        {"type": "tool_call", "id": 2, "name": "view", "arguments": {}},
                        {"type": "tool_call", "id": "c", "name": "bash", "arguments": "{}"},
                    ]
                ),
            ),
            ("text", '```json\n{"type": "tool_call", "id": "d", "name": "search"}\n```'),
        ]
    )
    assert [(c.id, c.name) for c in turn.items] == [
        ("a", "bash"),
        ("2", "view"),
        ("c", "bash"),
        ("d", "search"),
    ]
    assert turn.items[0].arguments == {"n": 1}
    assert isinstance(turn.items[0].arguments["n"], int)
    assert not turn.is_final


def test_parse_turn_turns_malformed_calls_into_error_results():
    turn = parse_turn(
        [
            ("text", '{"type": "tool_call", "id": "x", "name": "bash", '),
            ("data", {"type": "tool_call", "name": "bash"}),
            ("data", {"type": "tool_call", "id": "y"}),
            ("data", {"type": "tool_call", "id": "z", "name": "bash", "arguments": [1]}),
        ]
    )
    assert all(isinstance(item, ToolResult) and item.error for item in turn.items)
    assert [item.id for item in turn.items] == ["", "", "y", "z"]
    assert "not valid JSON" in turn.items[0].output
    assert '"id"' in turn.items[1].output
    assert '"name"' in turn.items[2].output


def test_parse_turn_final_answer_keeps_text_and_data():
    turn = parse_turn(
        [
            ("text", "Here is my fix:\n```diff\n" + DIFF + "```"),
            ("text", '{"note": "json but not a call"}'),
            ("data", {"type": "final", "patch": DIFF}),
        ]
    )
    assert turn.is_final
    assert DIFF in turn.text and "json but not a call" in turn.text
    assert turn.final_data() == {"type": "final", "patch": DIFF}


def test_tool_results_read_back_with_whole_numbers():
    results = parse_tool_results(
        [("data", {"type": "tool_result", "id": "a", "output": "x", "exit_code": 0.0})]
    )
    assert results == [ToolResult(id="a", output="x", exit_code=0)]


# ---------------------------------------------------------------------- turn styles
@pytest.mark.parametrize("style", ["message", "completed", "input-required"])
@pytest.mark.parametrize("calls_as", ["data", "text"])
def test_several_calls_per_turn_answered_in_order(style, calls_as, instance, host_bash, tmp_path):
    participant = scripted(
        turn_style=style,
        calls_as=calls_as,
        turns=[
            {
                "calls": [
                    {"name": "bash", "arguments": {"command": "echo one"}, "id": "first"},
                    {"name": "bash", "arguments": {"command": "echo two"}},
                    {"name": "bash", "arguments": {"command": "cat hello.py"}},
                ]
            },
            {"calls": [{"name": "bash", "arguments": {"command": "echo again"}}]},
        ],
        final={"text": "done"},
    )
    with running(participant) as url:
        outcome, events = drive(url, instance, host_bash, tmp_path)

    assert outcome.reason is None and outcome.ended_by == EndedBy.ANSWER, outcome.message
    assert (outcome.final_text, outcome.tool_calls, outcome.turns) == ("done", 4, 3)
    assert outcome.participant_name == "scripted-participant"
    assert outputs(participant, 1) == [
        ("first", "one\n"),
        ("t0-c1", "two\n"),
        ("t0-c2", 'print("hello")\n'),
    ]
    assert outputs(participant, 2) == [("t1-c0", "again\n")]
    assert [c.arguments["command"] for c, _ in host_bash.calls] == [
        "echo one",
        "echo two",
        "cat hello.py",
        "echo again",
    ]
    # every message of the participant's conversation shares one context
    kinds = [e["event"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "end"
    assert kinds.count("tool_call") == 4 and kinds.count("tool_result") == 4
    sent = [e["message"] for e in events if e["event"] == "send"]
    assert len({m["contextId"] for m in sent}) == 1
    if style == "input-required":
        assert all(m.get("taskId") for m in sent[1:])  # replies go into the waiting task
    else:
        assert not any(m.get("taskId") for m in sent)


@pytest.mark.parametrize("style", ["message", "completed", "input-required"])
def test_participant_without_streaming(style, instance, host_bash, tmp_path):
    call = {"name": "bash", "arguments": {"command": "echo x"}}
    participant = scripted(turn_style=style, turns=[{"calls": [call]}, {"calls": [call, call]}])
    participant.info.streaming = False
    with running(participant) as url:
        outcome, events = drive(url, instance, host_bash, tmp_path)
    assert outcome.ok, outcome.message
    assert (outcome.tool_calls, outcome.turns) == (3, 3)
    assert [len(m.results) for m in participant.received()] == [0, 1, 2]
    # one answer per request: no stream of updates
    assert all(e["kind"] in ("task", "message") for e in events if e["event"] == "receive")


def test_first_message_has_readable_text_and_task_data(instance, host_bash, tmp_path):
    participant = scripted(final={"text": "done"})
    limits = ParticipantLimits(
        max_tool_calls=7, tool_timeout=3, instance_timeout=30, reply_timeout=10
    )
    with running(participant) as url:
        outcome, _ = drive(url, instance, host_bash, tmp_path, limits=limits)
    assert outcome.ok and outcome.tool_calls == 0
    first = participant.received()[0]
    assert "hello.py should greet the world." in first.text
    assert "Look at hello.py." in first.text
    assert '"type": "tool_call"' in first.text
    spec = first.spec
    assert spec is not None
    assert spec["protocol"] == PROTOCOL and spec["version"] == 1
    assert (spec["instance_id"], spec["repo"], spec["workdir"]) == (
        "demo__hello-1",
        "demo/hello",
        "/testbed",
    )
    assert [t["name"] for t in spec["tools"]] == ["bash"]
    assert spec["limits"]["max_tool_calls"] == 7
    assert spec["limits"]["tool_timeout"] == 3
    assert spec["limits"]["instance_timeout"] == 30


def test_final_answer_with_fenced_diff(instance, host_bash, tmp_path):
    text = f"I changed hello.py:\n\n```diff\n{DIFF}```\n"
    participant = scripted(final={"text": text})
    with running(participant) as url:
        outcome, _ = drive(url, instance, host_bash, tmp_path)
    assert outcome.ok and outcome.final_text == text and outcome.final_data is None
    assert extract_patch(outcome.final_text, outcome.final_data) == DIFF


def test_final_answer_with_patch_data_part(instance, host_bash, tmp_path):
    participant = scripted(turn_style="input-required", final={"text": "fixed", "patch": DIFF})
    with running(participant) as url:
        outcome, _ = drive(url, instance, host_bash, tmp_path)
    assert outcome.ok and outcome.final_text == "fixed"
    assert outcome.final_data == {"type": "final", "patch": DIFF}


# ---------------------------------------------------------------------- bad participants
def test_invalid_json_gets_an_error_result_and_work_goes_on(instance, host_bash, tmp_path):
    participant = scripted(
        turns=[
            {"text": '{"type": "tool_call", "id": "1", "name": "bash", "arguments": {'},
            {"calls": [{"name": "bash", "arguments": {"command": "echo fine"}}]},
        ]
    )
    with running(participant) as url:
        outcome, _ = drive(url, instance, host_bash, tmp_path)
    assert outcome.ok, outcome.message
    [error] = participant.received()[1].results
    assert error.error and "not valid JSON" in error.output
    assert outputs(participant, 2) == [("t1-c0", "fine\n")]
    assert len(host_bash.calls) == 1


def test_unreadable_calls_again_and_again_end_with_protocol_error(instance, host_bash, tmp_path):
    bad = {"text": '[{"type": "tool_call", "name": "bash"'}
    participant = scripted(turns=[bad] * 5)
    with running(participant) as url:
        outcome, _ = drive(url, instance, host_bash, tmp_path)
    assert outcome.reason == Reason.PARTICIPANT_PROTOCOL
    assert outcome.ended_by == EndedBy.PROTOCOL_ERROR
    assert "3 answers in a row" in outcome.message
    assert host_bash.calls == []


def test_unknown_tool_and_missing_arguments_come_back_as_tool_errors(instance, host_bash, tmp_path):
    participant = scripted(
        turns=[
            {
                "calls": [
                    {"name": "frobnicate", "arguments": {"x": 1}},
                    {"name": "bash", "arguments": {}},
                    {"name": "bash", "arguments": {"command": "echo ok"}},
                ]
            }
        ]
    )
    with running(participant) as url:
        outcome, _ = drive(url, instance, host_bash, tmp_path)
    assert outcome.ok
    results = participant.received()[1].results
    assert [(r.error, r.output) for r in results] == [
        (True, "Unknown tool 'frobnicate'."),
        (True, "Missing argument 'command'."),
        (False, "ok\n"),
    ]


def test_huge_argument_is_refused_without_running_it(instance, host_bash, tmp_path):
    huge = "echo " + "x" * 5_000_000
    participant = scripted(
        turns=[
            {
                "calls": [
                    {"name": "bash", "arguments": {"command": huge}},
                    {"name": "bash", "arguments": {"command": "echo small"}},
                ]
            }
        ]
    )
    with running(participant) as url:
        outcome, events = drive(url, instance, host_bash, tmp_path)
    assert outcome.ok and outcome.tool_calls == 2
    big, small = participant.received()[1].results
    assert big.error and "limit is 1000000" in big.output
    assert (small.error, small.output) == (False, "small\n")
    assert [c.arguments["command"] for c, _ in host_bash.calls] == ["echo small"]
    transcript = (tmp_path / "transcript.jsonl").read_text()
    assert len(transcript) < 500_000  # long strings are capped
    assert any("more characters not shown" in json.dumps(e) for e in events)


def test_command_that_never_ends_is_cut_by_the_tool_timeout(instance, host_bash, tmp_path):
    participant = scripted(
        turns=[{"calls": [{"name": "bash", "arguments": {"command": "sleep 600"}}]}]
    )
    limits = FAST.model_copy(update={"tool_timeout": 0.5})
    with running(participant) as url:
        outcome, _ = drive(url, instance, host_bash, tmp_path, limits=limits)
    assert outcome.ok
    [(_, timeout)] = host_bash.calls
    assert timeout == 0.5
    [result] = participant.received()[1].results
    assert result.timed_out and result.error


def test_tool_call_limit_ends_work_and_tells_the_participant(instance, host_bash, tmp_path):
    call = {"name": "bash", "arguments": {"command": "echo hi"}}
    participant = scripted(turns=[{"calls": [call, call]}, {"calls": [call, call]}])
    limits = FAST.model_copy(update={"max_tool_calls": 3})
    with running(participant) as url:
        outcome, events = drive(url, instance, host_bash, tmp_path, limits=limits)
    assert outcome.reason == Reason.PARTICIPANT_LIMIT
    assert outcome.ended_by == EndedBy.TOOL_LIMIT
    assert outcome.tool_calls == 3 and len(host_bash.calls) == 3
    notice = participant.received()[-1]
    assert notice.text.startswith("Stop:") and "tool call limit (3)" in notice.text
    assert events[-1]["event"] == "end" and events[-1]["reason"] == "participant_limit"


def test_reply_after_the_instance_time_ran_out(instance, host_bash, tmp_path):
    participant = scripted(
        turns=[
            {"calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
            {"calls": [{"name": "bash", "arguments": {"command": "echo late"}}], "delay": 4},
        ]
    )
    limits = FAST.model_copy(update={"instance_timeout": 1.5})
    with running(participant) as url:
        outcome, _ = drive(url, instance, host_bash, tmp_path, limits=limits)
    assert outcome.reason == Reason.PARTICIPANT_TIMEOUT
    assert outcome.ended_by == EndedBy.INSTANCE_TIMEOUT
    assert "1.5 s" in outcome.message
    assert [c.arguments["command"] for c, _ in host_bash.calls] == ["echo hi"]


def test_participant_that_does_not_answer_in_time(instance, host_bash, tmp_path):
    participant = scripted(final={"text": "done", "delay": 1.2})
    limits = FAST.model_copy(update={"reply_timeout": 0.5})
    with running(participant) as url:
        outcome, _ = drive(url, instance, host_bash, tmp_path, limits=limits)
    assert outcome.reason == Reason.PARTICIPANT_TIMEOUT
    assert outcome.ended_by == EndedBy.REPLY_TIMEOUT
    assert "within 0.5 s" in outcome.message


def test_failed_task_ends_with_protocol_error(instance, host_bash, tmp_path):
    participant = scripted(turns=[{"fail": "out of ideas"}])
    with running(participant) as url:
        outcome, _ = drive(url, instance, host_bash, tmp_path)
    assert outcome.reason == Reason.PARTICIPANT_PROTOCOL
    assert outcome.ended_by == EndedBy.TASK_FAILED
    assert "failed: out of ideas" in outcome.message


def test_unreachable_url(instance, host_bash, tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/"
    outcome, events = drive(url, instance, host_bash, tmp_path)
    assert outcome.reason == Reason.PARTICIPANT_UNREACHABLE
    assert outcome.ended_by == EndedBy.UNREACHABLE
    assert url in outcome.message
    assert events[-1]["event"] == "end"


def test_tool_runner_failure_is_an_infrastructure_error(instance, tmp_path):
    def broken(call: ToolCall, timeout: float) -> ToolResult:
        raise RuntimeError("the container is gone")

    participant = scripted(turns=[{"calls": [{"name": "bash", "arguments": {"command": "ls"}}]}])
    with running(participant) as url:
        outcome, _ = drive(url, instance, broken, tmp_path)
    assert outcome.reason == Reason.INFRASTRUCTURE
    assert "the container is gone" in outcome.message


# ---------------------------------------------------------------------- participant processes
def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def serve_process(tmp_path: Path) -> Iterator[Any]:
    """Start participant processes on free ports; all are killed after the test."""
    started: list[subprocess.Popen] = []

    def start(argv: list[str]) -> tuple[str, subprocess.Popen]:
        port = _closed_port()
        log = (tmp_path / f"participant-{port}.log").open("w")
        proc = subprocess.Popen(
            [*argv, "--port", str(port)], cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT
        )
        started.append(proc)
        url = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(
                    url + ".well-known/agent-card.json", timeout=2, verify=tls_context()
                ).raise_for_status()
                return url, proc
            except httpx.HTTPError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"participant did not start: {argv}") from None
                time.sleep(0.1)

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def _cli(script: Path) -> list[str]:
    return [
        sys.executable,
        "-c",
        "from orchestrator.frontends.cli.app import main; main()",
        "participant",
        "scripted",
        "--script",
        str(script),
    ]


@pytest.mark.parametrize("while_", ["between turns", "during a turn"])
def test_participant_killed_mid_run(while_, instance, host_bash, tmp_path, serve_process):
    """The participant is a process of its own (its command line), killed: the process
    boundary is the point."""
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "turn_style": "input-required",
                "turns": [
                    {"calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
                    {"calls": [{"name": "bash", "arguments": {"command": "echo 2"}}], "delay": 30},
                ],
            }
        )
    )
    url, proc = serve_process(_cli(script))

    def kill(_: int) -> None:
        if while_ == "between turns":
            proc.kill()
            proc.wait()
        else:
            threading.Timer(1.0, proc.kill).start()

    host_bash.on_call = kill
    outcome, _ = drive(url, instance, host_bash, tmp_path)
    assert outcome.reason == Reason.PARTICIPANT_UNREACHABLE
    assert outcome.ended_by == EndedBy.DISCONNECTED
    assert "broke" in outcome.message
    assert len(host_bash.calls) == 1


def test_command_line_participant_with_text_calls(instance, host_bash, tmp_path, serve_process):
    """The reference participants' command line as a user starts it, in a process of its own
    (it serves until killed): its options reach the participant."""
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "calls_as": "text",
                "turns": [{"calls": [{"name": "bash", "arguments": {"command": "echo cli"}}]}],
                "final": {"text": "done"},
            }
        )
    )
    url, _ = serve_process([*_cli(script), "--turn-style", "completed"])
    outcome, _ = drive(url, instance, host_bash, tmp_path)
    assert outcome.ok and outcome.tool_calls == 1 and outcome.final_text == "done"


# ---------------------------------------------------------------------- a2a-sdk 0.3
A2A03_PYTHON = os.environ.get("SWE_GREEN_A2A03_PYTHON")


@pytest.mark.skipif(
    not A2A03_PYTHON,
    reason="set SWE_GREEN_A2A03_PYTHON to a Python with a2a-sdk[http-server]==0.3.* and uvicorn",
)
@pytest.mark.parametrize(
    "style,calls_as", [("input-required", "data"), ("message", "text")], ids=["task", "message"]
)
def test_a2a_03_participant(style, calls_as, instance, host_bash, tmp_path, serve_process):
    script = tmp_path / "script.json"
    record = tmp_path / "received.jsonl"
    script.write_text(
        json.dumps(
            {
                "turn_style": style,
                "calls_as": calls_as,
                "turns": [
                    {
                        "calls": [
                            {"name": "bash", "arguments": {"command": "echo a"}},
                            {"name": "bash", "arguments": {"command": "echo b"}},
                        ]
                    }
                ],
                "final": {"text": "done", "patch": DIFF},
            }
        )
    )
    fixture = FIXTURES / "a2a03_participant.py"
    url, _ = serve_process(
        [A2A03_PYTHON, str(fixture), "--script", str(script), "--record", str(record)]
    )
    outcome, events = drive(url, instance, host_bash, tmp_path)
    assert outcome.ok, outcome.message
    assert outcome.participant_name == "a2a03-participant"
    assert outcome.final_data == {"type": "final", "patch": DIFF}
    first, results = [json.loads(line) for line in record.read_text().splitlines()]
    assert first[1]["data"]["protocol"] == PROTOCOL
    assert [(p["data"]["id"], p["data"]["output"]) for p in results] == [
        ("t0-c0", "a\n"),
        ("t0-c1", "b\n"),
    ]


# ---------------------------------------------------------------------- real sandbox tools
GREET = 'def greet():\n    return "hello"\n'


@pytest.fixture
def testbed(make_sandbox) -> tuple[Any, str]:
    """A container with a one-commit git repository at /testbed; returns it and the commit."""
    sandbox = make_sandbox(network=False)
    sandbox.write_file("/testbed/greet.py", GREET)
    made = sandbox.exec(
        "cd /testbed && git init -q && git add -A && "
        "git -c user.name=t -c user.email=t@t commit -qm base && git rev-parse HEAD"
    )
    assert made.ok, made.output
    return sandbox, made.stdout.strip()


@pytest.mark.container
@pytest.mark.parametrize("style", ["message", "input-required"])
def test_explore_edit_and_finish_without_a_patch(style, testbed, instance, tmp_path):
    from orchestrator.patches.container_diff import container_diff
    from orchestrator.tools.tools_host import default_tools, sandbox_tool_runner

    sandbox, base = testbed
    participant = scripted(
        turn_style=style,
        turns=[
            {
                "calls": [
                    {"name": "bash", "arguments": {"command": "ls"}},
                    {"name": "view", "arguments": {"path": "/testbed/greet.py"}},
                    {"name": "search", "arguments": {"pattern": "hel+o", "glob": "*.py"}},
                ]
            },
            {
                "calls": [
                    {
                        "name": "edit",
                        "arguments": {
                            "command": "str_replace",
                            "path": "/testbed/greet.py",
                            "old_str": '"hello"',
                            "new_str": '"hello, world"',
                        },
                    },
                    {
                        "name": "edit",
                        "arguments": {
                            "command": "create",
                            "path": "/testbed/NOTES.txt",
                            "file_text": "greets the world\n",
                        },
                    },
                ]
            },
            {
                "calls": [
                    {
                        "name": "bash",
                        "arguments": {"command": "python3 -c 'import greet; print(greet.greet())'"},
                    }
                ]
            },
        ],
        final={"text": "done"},
    )
    with running(participant) as url:
        outcome, _ = drive(
            url, instance, sandbox_tool_runner(sandbox), tmp_path, tools=default_tools()
        )
    assert outcome.ok, outcome.message
    assert outcome.tool_calls == 6
    spec_tools = [t["name"] for t in participant.received()[0].spec["tools"]]
    assert spec_tools == ["bash", "view", "edit", "search"]
    ls, view, search = participant.received()[1].results
    assert ls.output.split() == ["greet.py"] and ls.exit_code == 0
    assert '2\t    return "hello"' in view.output
    assert "greet.py:2:" in search.output
    assert not any(r.error for r in participant.received()[2].results)
    [run] = participant.received()[3].results
    assert run.output == "hello, world\n"

    assert extract_patch(outcome.final_text, outcome.final_data) is None
    diff = container_diff(sandbox, base)
    assert '-    return "hello"\n+    return "hello, world"\n' in diff
    assert "+++ b/NOTES.txt" in diff and "+greets the world" in diff


@pytest.mark.container
def test_bad_calls_with_real_tools(testbed, instance, tmp_path):
    from orchestrator.tools.tools_host import default_tools, sandbox_tool_runner

    sandbox, _ = testbed
    participant = scripted(
        turns=[
            {
                "calls": [
                    {"name": "frobnicate", "arguments": {}},
                    {"name": "view", "arguments": {}},
                    {
                        "name": "edit",
                        "arguments": {
                            "command": "str_replace",
                            "path": "greet.py",
                            "old_str": "absent",
                            "new_str": "x",
                        },
                    },
                    {"name": "bash", "arguments": {"command": "sleep 600"}},
                    {"name": "bash", "arguments": {"command": "echo " + "x" * 5_000_000}},
                    {"name": "bash", "arguments": {"command": "echo still here"}},
                ]
            }
        ]
    )
    limits = FAST.model_copy(update={"tool_timeout": 2.0})
    with running(participant) as url:
        outcome, _ = drive(
            url,
            instance,
            sandbox_tool_runner(sandbox),
            tmp_path,
            limits=limits,
            tools=default_tools(),
        )
    assert outcome.ok, outcome.message
    unknown, missing, no_match, endless, huge, fine = participant.received()[1].results
    assert unknown.error and "unknown tool 'frobnicate'" in unknown.output
    assert missing.error and "'path'" in missing.output
    assert no_match.error and "not found" in no_match.output
    assert endless.timed_out
    assert huge.error and "limit is 1000000" in huge.output
    assert (fine.error, fine.output) == (False, "still here\n")


def test_unwritable_transcript_is_an_outcome_not_an_exception(instance, host_bash, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    outcome = asyncio.run(
        run_participant(
            "http://127.0.0.1:1/", instance, host_bash, FAST, blocker / "t.jsonl", tools=[]
        )
    )
    assert outcome.reason == Reason.INFRASTRUCTURE and "transcript" in outcome.message
