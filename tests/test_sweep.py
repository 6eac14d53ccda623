"""Validation sweeps: root causes, flaky tests, and the Markdown report (pure functions)."""

from __future__ import annotations

import pytest

from orchestrator.frontends.report.validation import validation_markdown
from orchestrator.models import CaseStatus, Instance
from orchestrator.validation.sweep import INFRASTRUCTURE, SweepRecord, root_cause
from orchestrator.validation.validation import flaky_tests

P, F = CaseStatus.PASSED, CaseStatus.FAILED


def test_flaky_tests_are_those_whose_outcome_differs_between_runs():
    runs = [{"a": P, "b": F, "c": P}, {"a": P, "b": P}]
    assert flaky_tests(runs) == ["b", "c"]  # c is missing from the second run
    assert flaky_tests(runs[:1]) == []


@pytest.mark.parametrize(
    ("message", "cause"),
    [
        ("Cannot check out abc: fatal: missing blob object 'f00'", "snapshot lacks an object"),
        ("setup failed (install command): requires-python >=3.10", "Python not available offline"),
        ("setup failed (install command): error: subprocess-exited", "install failed"),
        # matplotlib's recipe on this host (proxy sweep, docs/validation-proxy.md)
        ("environment setup: setup failed (pre-install): --2026-11-24 08:47:31--  "
         "http://www.qhull.org/download/qhull-2020-src-8.0.2.tgz | Resolving www.qhull.org "
         "(www.qhull.org)... failed: Name or service not known. | wget: unable to resolve host "
         "address 'www.qhull.org'", "set-up host out of reach"),
        ("FAIL_TO_PASS tests fail even with the gold patch: t1", "gold patch fails"),
        ("FAIL_TO_PASS tests fail even with the gold patch (they need the internet): t1",
         "needs the internet"),
        ("FAIL_TO_PASS tests are flaky with the gold patch: t1", "flaky FAIL_TO_PASS"),
        ("tests do not run at the base commit: no test output", "tests do not run"),
        ("the tests timed out during validation", "timeout"),
        ("something new", "other"),
        # the host's disk filled or its engine went away mid-sweep: run the instance again
        ("base commit: Cannot export the history of a5e6 from m.git: fatal: sha1 file "
         "'objects/pack/tmp_pack_x' write error. Out of diskspace", INFRASTRUCTURE),
        ("base commit: cannot write files in container c: the Docker daemon went away (500)",
         INFRASTRUCTURE),
        ("environment setup: install failed (install command): OSError: [Errno 28] No space "
         "left on device", INFRASTRUCTURE),
    ],
)  # fmt: skip
def test_failures_get_a_root_cause(message, cause):
    assert root_cause(message) == cause


def _record(iid: str, ok: bool, **kw) -> SweepRecord:
    fields = {"instance_id": iid, "repo": iid.split("-")[0].replace("__", "/"), "version": "1.0",
              "ok": ok, "stage": "done" if ok else "setup", "p2p_total": 10,
              "python_spec": "3.9", "python_used": "3.9",
              "timings": {"setup": 30.0, "base_commit": 5.0, "validation": 12.0}}  # fmt: skip
    return SweepRecord(**(fields | kw))


def test_the_report_gives_totals_causes_timings_and_flags_big_p2p_exclusions():
    records = [
        _record("a__x-1", True),
        _record("a__x-2", True, excluded_p2p=["t1", "t2"], flaky=["t2"]),  # 20 %: flagged
        _record("a__x-3", False, message="fatal: missing blob", cause="snapshot lacks an object"),
        _record("b__y-1", False, message="install command failed", cause="install failed"),
    ]
    text = validation_markdown(records, "Sweep", "swe-green validation-report R")
    first_screen = "\n".join(text.splitlines()[:6])
    # 2 of 4, and 2 of the 3 with a complete snapshot
    assert "**2 of 4 instances validate** (66.7 % of the 3" in first_screen
    assert "1 validated instance(s) leave out more than 10%" in first_screen
    assert "| install failed | 1: b__y-1 |" in text
    assert "| a/x | 3 | 30 / 30 | 5 / 5 | 12 / 12 | – |" in text
    assert "`a__x-2`: 2 of 10 **flagged**: `t1`, `t2`; flaky: t2" in text
    assert "swe-green validation-report R" in text


def test_hand_written_notes_end_the_report():
    text = validation_markdown([_record("a__x-1", True)], "Sweep", "cmd", notes="## Why\n\nx\n")
    assert text.endswith("## Why\n\nx\n")
    assert "## Why" not in validation_markdown([_record("a__x-1", True)], "Sweep", "cmd")


def test_a_sweep_goes_breadth_first_over_repository_versions():
    from orchestrator.models import Instance
    from orchestrator.validation.sweep import breadth_first

    def inst(iid: str, version: str) -> Instance:
        return Instance(instance_id=iid, repo="o/" + iid[0], version=version,
                        base_commit="b", environment_setup_commit="e")  # fmt: skip

    order = [inst("a1", "1"), inst("a2", "1"), inst("a3", "1"), inst("a4", "2"), inst("b1", "1")]
    assert [i.instance_id for i in breadth_first(order)] == ["a1", "a4", "b1", "a2", "a3"]


@pytest.mark.parametrize(
    ("at_base", "ok"),
    [
        ({"f1": F, "f2": F}, True),
        ({"f1": P, "f2": F}, True),  # one already passes (a flaky network test upstream)
        ({"f1": P, "f2": P}, False),  # nothing to fix: an empty patch would resolve it
    ],
)
def test_validation_needs_one_fail_to_pass_test_failing_at_the_base(at_base, ok):
    from orchestrator.grading.evaluation import SuiteRun
    from orchestrator.models import Instance
    from orchestrator.validation.validation import _judge

    instance = Instance(instance_id="o__r-1", repo="o/r", base_commit="b",
                        environment_setup_commit="e", FAIL_TO_PASS=["f1", "f2"],
                        PASS_TO_PASS=["p1"])  # fmt: skip
    base = SuiteRun(outcomes={**at_base, "p1": P}, section="x", exit_code=1)
    gold = SuiteRun(outcomes={"f1": P, "f2": P, "p1": P}, section="x", exit_code=0)
    check = _judge(instance, base, True, "", gold)
    assert check.ok is ok
    passing = [name for name, status in at_base.items() if status == P]
    assert check.f2p_passing_at_base == passing
    if ok and passing:
        assert "1 of 2 FAIL_TO_PASS test(s) already pass at the base" in check.message


@pytest.mark.container
def test_an_install_failing_on_a_stand_in_python_is_put_down_to_that_python(
    run_ctx, synthetic_instances, synthetic_dir, tmp_path
):
    """astropy 1.3 asks for Python 3.6, which no base image here has: its build fails on the
    nearest one, and the sweep says so rather than blaming the recipe."""
    import json

    from orchestrator.validation.sweep import PYTHON_UNAVAILABLE, sweep_instance

    recipes = json.loads((synthetic_dir / "recipes.json").read_text())
    for recipe in recipes:
        recipe |= {"python": "3.6", "install": "echo 'numpy 1.16 needs Python < 3.9' >&2; exit 1"}
    path = tmp_path / "recipes.json"
    path.write_text(json.dumps(recipes))
    run_ctx.settings = run_ctx.settings.replace(recipes_file=path)
    record = sweep_instance(run_ctx, synthetic_instances["demo__units-1"])
    assert not record.ok and record.stage == "setup"
    assert record.cause == PYTHON_UNAVAILABLE
    assert (record.python_spec, record.python_used) == ("3.6", "3.11")
    assert "numpy 1.16 needs Python < 3.9" in record.message


def test_a_resumed_sweep_runs_again_what_met_an_infrastructure_failure(tmp_path, monkeypatch):
    """An engine that lost its bridge fails every instance in a second: that is no verdict on
    them, so a resumed sweep runs them again; a verdict (even a failure) is kept."""
    from orchestrator.context.run_context import RunContext
    from orchestrator.context.run_dir import RunDir
    from orchestrator.errors import SandboxError
    from orchestrator.models import Instance
    from orchestrator.run.validation_sweep import run_sweep
    from orchestrator.sandbox.local import LocalBackend
    from orchestrator.settings import Settings
    from orchestrator.validation import sweep

    instances = [
        Instance(instance_id=iid, repo="o/r", version="1", base_commit="b",
                 environment_setup_commit="e")
        for iid in ("o__r-1", "o__r-2")
    ]  # fmt: skip
    ctx = RunContext(Settings(data_dir=tmp_path), LocalBackend(), "sweep", RunDir(tmp_path / "r"))
    engine_down = True

    def sweep_one(ctx, instance):  # noqa: ANN001, ANN202
        if engine_down:
            raise SandboxError("could not find bridge docker0")
        if instance.instance_id == "o__r-1":
            return _record(instance.instance_id, True)
        return _record(instance.instance_id, False, cause="gold patch fails")

    monkeypatch.setattr(sweep, "sweep_instance", sweep_one)
    first = run_sweep(ctx, instances, 1)
    assert {r.cause for r in first} == {sweep.INFRASTRUCTURE}
    engine_down = False
    second = {r.instance_id: r for r in run_sweep(ctx, instances, 1)}
    assert second["o__r-1"].ok and second["o__r-2"].cause == "gold patch fails"
    calls = []
    monkeypatch.setattr(sweep, "sweep_instance", lambda c, i: calls.append(i) or None)
    assert len(run_sweep(ctx, instances, 1)) == 2 and calls == []  # verdicts are kept


def test_an_instance_the_interruption_ended_is_no_verdict_and_is_redone(tmp_path, monkeypatch):
    """The interruption removes the containers in flight: what an instance meets then (its
    tests 'do not run') is recorded as infrastructure, which a resumed sweep redoes."""
    from orchestrator.context.run_context import RunContext
    from orchestrator.context.run_dir import RunDir
    from orchestrator.sandbox.local import LocalBackend
    from orchestrator.settings import Settings
    from orchestrator.validation import sweep

    instance = Instance(instance_id="o__r-1", repo="o/r", version="1", base_commit="b",
                        environment_setup_commit="e")  # fmt: skip
    ctx = RunContext(Settings(data_dir=tmp_path), LocalBackend(), "sweep", RunDir(tmp_path / "r"))

    def ended_by_the_interruption(ctx, instance):  # noqa: ANN001, ANN202
        ctx.cancelled.set()  # the sweep was interrupted while this instance ran
        return _record(instance.instance_id, False, cause="tests do not run")

    monkeypatch.setattr(sweep, "sweep_instance", ended_by_the_interruption)
    record = sweep.sweep_and_record(ctx, instance)
    assert record.cause == sweep.INFRASTRUCTURE and "interrupted" in record.message
    assert sweep.pending(ctx, [instance]) == ([], [instance])
