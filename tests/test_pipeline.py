"""The seven phases joined, on the synthetic instances, with reference participants over A2A."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import time

import pytest

from orchestrator.frontends.reference_participants import make_participant, running
from orchestrator.housekeeping.inventory import list_containers
from orchestrator.models import Reason, Status
from orchestrator.participant.protocol import A2AParticipant
from orchestrator.run.scheduler import run_evaluation

from .conftest import TEST_RUN_ID, cli_env, run_cli

pytestmark = pytest.mark.container

ALL = ["demo__calc-1", "demo__textkit-1", "demo__units-1"]


def _evaluate(run_ctx, instances, url, **kwargs):
    return asyncio.run(
        run_evaluation(run_ctx, instances, A2AParticipant(url=url), concurrency=2, **kwargs)
    )


@pytest.fixture(scope="module")
def gold_url(synthetic_dir):
    with running(make_participant("gold", dataset=str(synthetic_dir / "instances.jsonl"))) as url:
        yield url


def test_gold_participant_resolves_every_synthetic_instance(run_ctx, synthetic_instances, gold_url):
    events = []
    results = _evaluate(
        run_ctx, [synthetic_instances[i] for i in ALL], gold_url, on_event=events.append
    )
    assert [(r.instance_id, r.status) for r in results] == [(i, Status.RESOLVED) for i in ALL]
    for result in results:
        assert result.tests.fail_to_pass_failed == [] and result.tests.pass_to_pass_failed == []
        assert result.apply_strategy == "git apply"
        assert {"setup", "participant", "grading", "total"} <= set(result.timings)
        assert result.twin_check is not None and result.twin_check.checked, result.twin_check
        files = {p.name for p in run_ctx.run_dir.instance_dir(result.instance_id).iterdir()}
        assert {"result.json", "patch.diff", "eval.sh", "setup.log", "transcript.jsonl"} <= files
    finished = [e for e in events if e.kind == "finished"]
    assert [e.done for e in finished] == [1, 2, 3]
    assert events[-1].kind == "run_finished" and events[-1].statuses == {"resolved": 3}
    # resolved instances keep no container
    assert [c for c in list_containers(run_ctx.backend, run_id=TEST_RUN_ID) if c.role in
            ("participant", "grading", "twin", "validation", "validation-twins")] == []  # fmt: skip


def test_empty_participant_is_no_op_and_keeps_no_container(run_ctx, synthetic_instances):
    """An empty patch leaves nothing to learn from: its container is not kept."""
    with running(make_participant("empty")) as url:
        [result] = _evaluate(run_ctx, [synthetic_instances["demo__units-1"]], url)
    assert (result.status, result.reason) == (Status.NO_OP, Reason.EMPTY_PATCH)
    assert result.container is None
    left = list_containers(run_ctx.backend, run_id=TEST_RUN_ID, instance_id="demo__units-1")
    assert [c.name for c in left if c.role == "participant"] == []


def test_unreachable_participant_is_an_error_and_the_others_go_on(run_ctx, synthetic_instances):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/"
    results = _evaluate(run_ctx, [synthetic_instances[i] for i in ALL[:2]], closed)
    assert [(r.status, r.reason) for r in results] == [
        (Status.ERROR, Reason.PARTICIPANT_UNREACHABLE)
    ] * 2
    for r in results:
        run_ctx.backend.remove_container(r.container)


def test_validation_catches_a_broken_environment(
    run_ctx, synthetic_instances, synthetic_dir, tmp_path, gold_url
):
    recipes = json.loads((synthetic_dir / "recipes.json").read_text())
    for recipe in recipes:
        if recipe["repo"] == "demo/calc":
            recipe["packages"] = []  # no pytest: the test command cannot run
    broken = tmp_path / "recipes.json"
    broken.write_text(json.dumps(recipes))
    run_ctx.settings = run_ctx.settings.replace(**{"recipes_file": broken})
    [result] = _evaluate(run_ctx, [synthetic_instances["demo__calc-1"]], gold_url)
    assert (result.status, result.reason) == (Status.ERROR, Reason.ENVIRONMENT)
    assert "validation" in result.message
    assert result.tool_calls == 0  # the participant never saw the instance


def test_run_killed_with_sigkill_resumes_to_the_same_results(
    env_settings, tmp_path, docker_backend
):
    env = cli_env(env_settings, tmp_path / "runs")
    ids = [arg for i in ALL for arg in ("--id", i)]
    run_dir = tmp_path / "runs" / "killed"
    proc = run_cli(
        ["run", "--participant", "gold", *ids, "--concurrency", "1", "--output", str(run_dir)], env
    )
    deadline = time.monotonic() + 300
    while not list(run_dir.glob("instances/*/result.json")):
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    first = {p.parent.name: p.stat().st_mtime_ns for p in run_dir.glob("instances/*/result.json")}
    assert 1 <= len(first) < 3

    resumed = run_cli(["run", "--resume", str(run_dir)], env)
    out, _ = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, out
    results = json.loads((run_dir / "results.json").read_text())
    row = results["results"][0]
    assert row["total_instances"] == 3 and row["resolved_pct"] == 1.0
    after = {p.parent.name: p.stat().st_mtime_ns for p in run_dir.glob("instances/*/result.json")}
    assert set(after) == set(ALL)
    assert all(after[i] == first[i] for i in first)  # not graded twice
    run_id = json.loads((run_dir / "config.json").read_text())["run_id"]
    assert list_containers(docker_backend, run_id=run_id) == []


def test_from_its_tools_the_participant_reaches_no_network_no_hidden_patch_no_later_commit(
    run_ctx, synthetic_instances, synthetic_dir
):
    from orchestrator.frontends.reference_participants.scripted import Script, ScriptedParticipant

    instance = synthetic_instances["demo__units-1"]
    fix = next(
        json.loads(line)["fix_commit"]
        for line in (synthetic_dir / "instances.jsonl").read_text().splitlines()
        if instance.instance_id in line
    )
    probes = {
        "network": "python3 -c \"import socket; socket.create_connection(('pypi.org', 443), 5)\" "
        "2>&1 | tail -1; curl -sS -m 5 https://pypi.org/simple/ 2>&1 | tail -1",
        # text that only the hidden test patch and the gold patch contain
        "hidden": "grep -rIl --exclude-dir=proc --exclude-dir=sys "
        "-e 'def test_to_celsius' -e '(f - 32) \\* 5 / 9' / 2>/dev/null; echo scanned",
        "history": f"git cat-file -t {fix} 2>&1; git log --all --oneline | wc -l",
    }
    script = Script(
        turns=[{"calls": [{"name": "bash", "arguments": {"command": c}}]} for c in probes.values()],
    )
    participant = ScriptedParticipant(script)
    with running(participant) as url:
        [result] = _evaluate(run_ctx, [instance], url)
    assert result.status == Status.NO_OP and result.tool_calls == 3
    events = [
        json.loads(line)
        for line in (run_ctx.instance_dir(instance) / "transcript.jsonl").read_text().splitlines()
    ]
    outputs = [e["result"]["output"] for e in events if e.get("event") == "tool_result"]
    network, hidden, history = outputs
    assert "Temporary failure in name resolution" in network or "unreachable" in network.lower()
    assert "Could not resolve host" in network
    assert hidden.strip() == "scanned"  # no file anywhere holds the test or the gold patch
    assert "could not get object info" in history or "Not a valid object" in history
    assert history.strip().splitlines()[-1] == "2"  # the setup and base commits only
    assert result.container is None  # an empty patch keeps no container


def test_the_empty_participant_scores_no_fail_to_pass_and_all_pass_to_pass(
    run_ctx, synthetic_instances
):
    from orchestrator.grading.classify import aggregate

    with running(make_participant("empty")) as url:
        results = _evaluate(run_ctx, [synthetic_instances[i] for i in ALL], url)
    row = aggregate(results)
    assert (row.fail_to_pass_passed_pct, row.pass_to_pass_passed_pct, row.no_op_pct) == (0, 1, 1)
    for result in results:
        instance = synthetic_instances[result.instance_id]
        assert result.tests.fail_to_pass_failed == instance.FAIL_TO_PASS
        assert result.tests.pass_to_pass_passed == instance.PASS_TO_PASS
        saved = json.loads(
            (run_ctx.run_dir.instance_dir(result.instance_id) / "result.json").read_text()
        )
        assert saved["tests"]["fail_to_pass_failed"] == instance.FAIL_TO_PASS
        assert result.container is None  # an empty patch keeps no container


def test_a_patch_into_git_hooks_is_refused_on_every_instance(
    run_ctx, synthetic_instances, tmp_path
):
    from orchestrator.frontends.reference_participants.scripted import (
        FinalAnswer,
        Script,
        ScriptedParticipant,
    )

    hook = (
        "diff --git a/.git/hooks/post-checkout b/.git/hooks/post-checkout\n"
        "new file mode 100755\n--- /dev/null\n+++ b/.git/hooks/post-checkout\n"
        "@@ -0,0 +1,2 @@\n+#!/bin/sh\n+echo 'import sys' > /testbed/conftest.py\n"
    )
    participant = ScriptedParticipant(Script(final=FinalAnswer(text="fixed", patch=hook)))
    with running(participant) as url:
        results = _evaluate(run_ctx, [synthetic_instances[i] for i in ALL], url)
    assert [(r.status, r.reason) for r in results] == [
        (Status.NO_OP, Reason.PATCH_PATH_REFUSED)
    ] * 3
    for result in results:
        assert ".git/hooks/post-checkout: inside .git" in result.message
        assert result.tests.fail_to_pass_passed == []
        run_ctx.backend.remove_container(result.container)
