"""SWE-bench 5.0's failure labels for our results: what a failure or error likely rests on.

SWE-bench 5.0 labels each instance that did not resolve by the first of eight signatures found
in its logs (``swebench.harness.infra_failure``): five say the environment broke (tier
``environment``), three can come from the environment or from the patch (tier ``ambiguous``).
The label is advisory there and here: it never changes a verdict, and the leaderboard keeps
the errors that say nothing about the participant out of the score by our reasons
(:data:`orchestrator.run.outcome.NOT_GRADED`), as before.

:func:`failure_label` gives the label of one result: a reason that names the cause maps to its
label (a test run over its time limit is ``tests_timed_out``); a reason that names the
participant's own doing (its patch, its answer, tampering) has none; anything else is read
from the symptoms in its message and test output with the official signatures, so the
official reader of our ``run_instance.log`` and ``test_output.txt`` finds the same label. An
error of ours with no such symptom (a Docker failure whose message lacks the daemon's words,
a set-up that failed) has no label; its reason says what it was.
"""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.models import FailureLabel, InstanceResult, Reason, Status

TIER_ENVIRONMENT = "environment"
TIER_AMBIGUOUS = "ambiguous"

# SWE-bench 5.0's signatures (label, pattern), matched in this order; the first hit wins
_SIGNATURES: tuple[tuple[FailureLabel, str], ...] = (
    (FailureLabel.BROWSER_LAUNCH_FAILED, r"Failed to launch|Failed to connect to the bus"),
    (
        FailureLabel.DISPLAY_UNAVAILABLE,
        r"cannot open display|Missing X server|unable to open X display",
    ),
    (FailureLabel.OUT_OF_MEMORY, r"Cannot allocate memory|OutOfMemoryError|^Killed$"),
    (
        FailureLabel.CONTAINER_UNAVAILABLE,
        r"Error response from daemon|Cannot connect to the Docker daemon",
    ),
    (
        FailureLabel.NETWORK_UNREACHABLE,
        r"Could not resolve host|Temporary failure in name resolution",
    ),
    (FailureLabel.MISSING_MODULE, r"Cannot find module|MODULE_NOT_FOUND|ModuleNotFoundError"),
    (FailureLabel.NO_TESTS_COLLECTED, r"no tests ran|collected 0 items"),
    (FailureLabel.TESTS_TIMED_OUT, r"Timeout error: \d+ seconds exceeded"),
)
_COMPILED = tuple((label, re.compile(pattern, re.MULTILINE)) for label, pattern in _SIGNATURES)

ENVIRONMENT_LABELS = frozenset(
    {
        FailureLabel.BROWSER_LAUNCH_FAILED,
        FailureLabel.DISPLAY_UNAVAILABLE,
        FailureLabel.OUT_OF_MEMORY,
        FailureLabel.CONTAINER_UNAVAILABLE,
        FailureLabel.NETWORK_UNREACHABLE,
    }
)

# the participant's own doing: no environment symptom explains it
_PARTICIPANT_REASONS = frozenset(
    {
        Reason.EMPTY_PATCH,
        Reason.PATCH_APPLY_FAILED,
        Reason.PATCH_PATH_REFUSED,
        Reason.REINSTALL_REFUSED,
        Reason.PARTICIPANT_UNREACHABLE,
        Reason.PARTICIPANT_TIMEOUT,
        Reason.PARTICIPANT_PROTOCOL,
        Reason.PARTICIPANT_LIMIT,
        Reason.DISK_LIMIT,
        Reason.TEST_OUTPUT_FORGED,
        Reason.TAMPER_DETECTED,
        Reason.CANCELLED,
    }
)


def tier(label: FailureLabel) -> str:
    """``environment`` (the environment broke) or ``ambiguous`` (environment or patch)."""
    return TIER_ENVIRONMENT if label in ENVIRONMENT_LABELS else TIER_AMBIGUOUS


def symptom_label(text: str) -> FailureLabel | None:
    """The label of the first official signature found in ``text``, else None."""
    for label, pattern in _COMPILED:
        if pattern.search(text):
            return label
    return None


def timeout_signature(seconds: float) -> str:
    """The line the official harness appends to the test output of a run it stopped."""
    return f"Timeout error: {int(seconds)} seconds exceeded."


def failure_label(
    status: Status, reason: Reason, message: str = "", test_output: str = ""
) -> FailureLabel | None:
    """SWE-bench 5.0's label for a result, or None (a resolved instance, a failure of the
    participant's own making, or no known symptom); see the module doc."""
    if status == Status.RESOLVED or reason in _PARTICIPANT_REASONS:
        return None
    if reason == Reason.TEST_TIMEOUT:
        return FailureLabel.TESTS_TIMED_OUT
    return symptom_label(f"{message}\n{test_output}")


def label_of(result: InstanceResult, instance_dir: Path) -> FailureLabel | None:
    """:func:`failure_label` of ``result``, with the test output in ``instance_dir``."""
    try:
        output = (instance_dir / "test_output.txt").read_text(encoding="utf-8", errors="replace")
    except OSError:
        output = ""  # the tests did not run
    return failure_label(result.status, result.reason, result.message, output)
