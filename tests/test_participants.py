"""The reference participants (gold, empty, claude) served over A2A and driven by the client."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.dataset.instances import load_instances
from orchestrator.errors import UserError
from orchestrator.frontends.cli.app import app as cli_app
from orchestrator.frontends.reference_participants import make_participant, running
from orchestrator.frontends.reference_participants.claude import ClaudeParticipant
from orchestrator.models import Instance, Reason
from orchestrator.participant.client import EndedBy, ParticipantLimits, run_participant
from orchestrator.patches.extract import extract_patch

from .fake_anthropic import UNAUTHORIZED, FakeAnthropic, Reply, bash, text, tool_use
from .reference_data import VERIFIED as DATASET
from .test_participant_protocol import BASH_ONLY, FAST, HostBash


@pytest.fixture(scope="module")
def verified() -> list[Instance]:
    return load_instances(str(DATASET))


@pytest.fixture
def host_bash(tmp_path: Path) -> HostBash:
    root = tmp_path / "work"
    root.mkdir()
    (root / "hello.py").write_text('print("hello")\n')
    return HostBash(root)


def drive(url, instance, runner, tmp_path, limits: ParticipantLimits = FAST):
    return asyncio.run(
        run_participant(
            url, instance, runner, limits, tmp_path / "transcript.jsonl", tools=BASH_ONLY
        )
    )


@pytest.mark.parametrize("style", ["message", "completed", "input-required"])
def test_gold_answers_with_the_gold_patch(style, verified, host_bash, tmp_path):
    instance = verified[7]
    participant = make_participant("gold", dataset=str(DATASET), turn_style=style)
    with running(participant) as url:
        outcome = drive(url, instance, host_bash, tmp_path)
    assert outcome.ok, outcome.message
    assert outcome.final_data == {"type": "final", "patch": instance.patch}
    assert outcome.tool_calls == 0 and host_bash.calls == []
    assert outcome.participant_name == "gold-participant"


def test_gold_patch_in_text(verified, host_bash, tmp_path):
    from orchestrator.frontends.reference_participants.gold import GoldParticipant

    instance = verified[0]
    with running(GoldParticipant(str(DATASET), patch_in="text")) as url:
        outcome = drive(url, instance, host_bash, tmp_path)
    assert outcome.ok and outcome.final_data is None
    assert f"```diff\n{instance.patch}```" in outcome.final_text
    assert extract_patch(outcome.final_text, None) == instance.patch


def test_gold_with_an_unknown_instance_fails_its_task(verified, host_bash, tmp_path):
    stranger = verified[0].model_copy(update={"instance_id": "nobody__nothing-1"})
    with running(make_participant("gold", dataset=str(DATASET))) as url:
        outcome = drive(url, stranger, host_bash, tmp_path)
    assert outcome.reason == Reason.PARTICIPANT_PROTOCOL
    assert outcome.ended_by == EndedBy.TASK_FAILED
    assert "nobody__nothing-1" in outcome.message


def test_empty_answers_no_change(verified, host_bash, tmp_path):
    with running(make_participant("empty", turn_style="input-required")) as url:
        outcome = drive(url, verified[0], host_bash, tmp_path)
    assert outcome.ok and outcome.final_text == "no change" and outcome.final_data is None


def test_make_participant_explains_bad_options(tmp_path):
    with pytest.raises(UserError, match="needs a dataset"):
        make_participant("gold")
    with pytest.raises(UserError, match="needs a script"):
        make_participant("scripted")
    with pytest.raises(UserError, match="Unknown participant kind"):
        make_participant("silver")
    with pytest.raises(UserError, match="Unknown turn style"):
        make_participant("empty", turn_style="sideways")  # type: ignore[arg-type]
    broken = tmp_path / "script.json"
    broken.write_text('{"turns": [{"calls": "nope"}]}')
    with pytest.raises(UserError, match="Cannot read the script"):
        make_participant("scripted", script=broken)


def test_cli_reports_a_bad_script_in_one_line(tmp_path):
    result = CliRunner().invoke(
        cli_app, ["participant", "scripted", "--script", str(tmp_path / "missing.json")]
    )
    assert result.exit_code == 2
    assert "Cannot read the script" in result.output
    assert "Traceback" not in result.output


# ---------------------------------------------------------------------- claude
@pytest.mark.parametrize("style", ["message", "input-required"])
def test_claude_explores_edits_and_finishes(style, verified, host_bash, tmp_path):
    instance = verified[0].model_copy(update={"problem_statement": "Greet the world."})
    script = [
        bash("cat hello.py"),
        Reply(
            [
                text("I will change the greeting."),
                tool_use("bash", {"command": "sed -i 's/hello/hello, world/' hello.py"}),
                tool_use("bash", {"command": "python3 hello.py; exit 3"}),
            ]
        ),
        Reply([text("Changed the greeting in hello.py.")]),
    ]
    with FakeAnthropic(script) as fake:
        participant = ClaudeParticipant(api_key="test", base_url=fake.url, turn_style=style)
        with running(participant) as url:
            outcome = drive(url, instance, host_bash, tmp_path)

    assert outcome.ok, outcome.message
    assert outcome.final_text == "done"
    assert outcome.final_data == {"type": "final", "summary": "Changed the greeting in hello.py."}
    assert (host_bash.root / "hello.py").read_text() == 'print("hello, world")\n'
    assert outcome.tool_calls == 3
    first = fake.requests[0]
    assert "Greet the world." in first["messages"][0]["content"]
    assert "/testbed" in first["system"]
    assert [t["name"] for t in first["tools"]] == ["bash"]
    assert first["tools"][0]["input_schema"]["required"] == ["command"]
    assert [b["content"] for b in fake.tool_results(1)] == ['print("hello")\n']
    second = fake.tool_results(2)
    assert [b["tool_use_id"] for b in second] == ["toolu_1_1", "toolu_1_2"]
    assert second[1]["content"] == "hello, world\n\n[exit code 3]"


def test_claude_stops_after_max_turns(verified, host_bash, tmp_path):
    with FakeAnthropic([bash("echo again")], repeat_last=True) as fake:
        participant = ClaudeParticipant(api_key="test", base_url=fake.url, max_turns=3)
        with running(participant) as url:
            outcome = drive(url, verified[0], host_bash, tmp_path)
    assert outcome.ok and outcome.final_text == "done"
    assert outcome.tool_calls == 3 and len(fake.requests) == 3


def test_claude_with_a_refused_api_key_fails_its_task(verified, host_bash, tmp_path):
    with FakeAnthropic([UNAUTHORIZED]) as fake:
        participant = ClaudeParticipant(api_key="bad", base_url=fake.url)
        with running(participant) as url:
            outcome = drive(url, verified[0], host_bash, tmp_path)
    assert outcome.reason == Reason.PARTICIPANT_PROTOCOL
    assert outcome.ended_by == EndedBy.TASK_FAILED
    assert "AuthenticationError" in outcome.message


def test_transcript_is_json_lines(verified, host_bash, tmp_path):
    with running(make_participant("empty")) as url:
        drive(url, verified[0], host_bash, tmp_path)
    events = [json.loads(line) for line in (tmp_path / "transcript.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events] == ["start", "card", "send", "receive", "turn_end", "end"]
    assert all(isinstance(e["t"], float | int) for e in events)


def test_limits_from_settings():
    from orchestrator.settings import Settings

    settings = Settings(
        max_tool_calls=5, tool_timeout=7, instance_timeout=60, participant_timeout=11
    )
    limits = ParticipantLimits.from_settings(settings.participant)
    assert (
        limits.max_tool_calls,
        limits.tool_timeout,
        limits.instance_timeout,
        limits.reply_timeout,
    ) == (5, 7, 60, 11)
