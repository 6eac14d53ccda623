"""SWE-bench 5.0's failure labels on our results, flaky marks, and both in the reports."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from swebench.harness.infra_failure import INFRA_FAILURE_SIGNATURES, classify_text

from orchestrator.context.run_dir import RunDir
from orchestrator.frontends.report import render_html, render_text
from orchestrator.grading.classify import aggregate
from orchestrator.grading.failure_labels import (
    ENVIRONMENT_LABELS,
    failure_label,
    symptom_label,
    tier,
)
from orchestrator.models import CaseGroups, FailureLabel, InstanceResult, Reason, Status


def test_the_labels_and_signatures_are_the_official_ones() -> None:
    """Our copy of the signatures is SWE-bench 5.0's, label for label and tier for tier."""
    official = [(label, official_tier) for label, official_tier, _ in INFRA_FAILURE_SIGNATURES]
    assert [(label.value, tier(label)) for label in FailureLabel] == official
    samples = [
        "Failed to launch the browser process",
        "Error: cannot open display: :0",
        "Killed",
        "docker: Error response from daemon: no such container",
        "curl: (6) Could not resolve host: pypi.org",
        "ModuleNotFoundError: No module named 'numpy'",
        "============ no tests ran in 0.01s ============",
        "Timeout error: 1800 seconds exceeded.",
        "FAILED t.py::test_a - AssertionError",
    ]
    for text in samples:
        found = symptom_label(text)
        expected = classify_text(text)
        assert (found.value, tier(found)) == expected if found else expected is None


@pytest.mark.parametrize(
    ("status", "reason", "message", "output", "label"),
    [
        (Status.RESOLVED, Reason.NONE, "", "ModuleNotFoundError: x", None),
        (Status.ERROR, Reason.TEST_TIMEOUT, "ran longer than 60 s", "", "tests_timed_out"),
        (Status.ERROR, Reason.TEST_CRASH, "no runner summary", "Killed\n", "out_of_memory"),
        (Status.REGRESSION, Reason.NONE, "", "E ModuleNotFoundError: No module", "missing_module"),
        (Status.NO_OP, Reason.NONE, "", "collected 0 items\n", "no_tests_collected"),
        (Status.ERROR, Reason.ENVIRONMENT, "pip: Temporary failure in name resolution", "",
         "network_unreachable"),
        (Status.ERROR, Reason.INFRASTRUCTURE, "500 Server Error: Error response from daemon", "",
         "container_unavailable"),
        (Status.ERROR, Reason.INFRASTRUCTURE, "internal error: KeyError('x')", "", None),
        # the participant's own doing: no environment symptom explains it
        (Status.REGRESSION, Reason.TAMPER_DETECTED, "", "ModuleNotFoundError: x", None),
        (Status.ERROR, Reason.PARTICIPANT_TIMEOUT, "Killed", "", None),
        (Status.NO_OP, Reason.PATCH_APPLY_FAILED, "patch does not apply", "", None),
        (Status.WORK_IN_PROGRESS, Reason.NONE, "", "FAILED t.py::a", None),
    ],
)  # fmt: skip
def test_failure_label(
    status: Status, reason: Reason, message: str, output: str, label: str | None
) -> None:
    found = failure_label(status, reason, message, output)
    assert (found.value if found else None) == label
    if found is not None:
        assert (tier(found) == "environment") == (found in ENVIRONMENT_LABELS)


def _results() -> list[InstanceResult]:
    flaky = InstanceResult(
        instance_id="o__r-1", repo="o/r", status=Status.BREAKING_RESOLVED,
        tests=CaseGroups(fail_to_pass_passed=["a"], pass_to_pass_failed=["b"]),
        flaky_tests={"b": ["FAILED", "PASSED", "FAILED"]},
    )  # fmt: skip
    timeout = InstanceResult(
        instance_id="o__r-2", repo="o/r", status=Status.ERROR, reason=Reason.TEST_TIMEOUT,
        message="the tests ran longer than 60 s", failure_label=FailureLabel.TESTS_TIMED_OUT,
    )  # fmt: skip
    network = InstanceResult(
        instance_id="o__r-3", repo="o/r", status=Status.ERROR, reason=Reason.ENVIRONMENT,
        message="Could not resolve host", failure_label=FailureLabel.NETWORK_UNREACHABLE,
    )  # fmt: skip
    plain = InstanceResult(instance_id="o__r-4", repo="o/r", status=Status.RESOLVED)
    return [flaky, timeout, network, plain]


def test_verdict_marks_and_the_flaky_count() -> None:
    flaky, timeout, _network, plain = _results()
    assert flaky.verdict == "breaking_resolved~"
    assert plain.verdict == "resolved" and timeout.verdict == "error"
    reduced = flaky.model_copy(update={"tests": CaseGroups(pass_to_pass_excluded=["c"])})
    assert reduced.verdict == "breaking_resolved*~"
    assert aggregate(_results()).flaky_count == 1
    # an error's flaky tests (none are recorded, but a hand-made file) do not count
    assert aggregate([timeout.model_copy(update={"flaky_tests": {"x": ["a"]}})]).flaky_count == 0


def test_reports_show_labels_and_flaky_marks(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    for result in _results():
        run.write_result(result)
    console = Console(record=True, width=200, color_system=None)
    console.print(render_text(run))
    text = console.export_text()
    assert "Not resolved by SWE-bench 5.0 failure label" in text
    assert "tests_timed_out" in text and "network_unreachable" in text
    assert "test_timeout [tests_timed_out]" in text
    assert "breaking_resolved~" in text
    assert "~ 1 of 4 instance(s)" in text
    assert "b: FAILED PASSED FAILED" in text  # the caveat names the outcomes
    page = render_html(run)
    assert 'data-label="tests_timed_out"' in page and 'data-label="network_unreachable"' in page
    assert 'class="marks"' in page and "id=flaky" in page
