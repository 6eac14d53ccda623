"""What a finished run's exit status says (docs/reference/statuses.md; tested).

====  ==================================================================================
code  meaning
====  ==================================================================================
0     the run graded its instances (resolved or not)
1     ``report --compare`` found a regression (an instance no longer resolved, a new error)
2     a usage or set-up error: a bad option or setting, no participant, no Docker, ...
      (one line naming the problem and the fix; no run directory is left behind)
3     the run finished but graded nothing: every instance ended in an infrastructure,
      environment or participant-connection error
130   interrupted (Ctrl-C, SIGTERM); ``run --resume`` continues
====  ==================================================================================
"""

from __future__ import annotations

from collections.abc import Iterable

from orchestrator.models import InstanceResult, Reason, Status

EXIT_GRADED = 0
EXIT_REGRESSION = 1
EXIT_USAGE = 2
EXIT_NOTHING_GRADED = 3
EXIT_INTERRUPTED = 130

# errors that say nothing about the participant's work: the instance was not graded
NOT_GRADED = frozenset(
    {
        Reason.ENVIRONMENT,
        Reason.PARTICIPANT_UNREACHABLE,
        Reason.PARTICIPANT_PROTOCOL,
        Reason.INFRASTRUCTURE,
        Reason.CANCELLED,
    }
)


def graded(result: InstanceResult) -> bool:
    """Whether the instance says something about the participant's work."""
    return not (result.status == Status.ERROR and result.reason in NOT_GRADED)


def run_exit_code(results: Iterable[InstanceResult]) -> int:
    """0 when at least one instance was graded (or there were none to grade), else 3."""
    results = list(results)
    if results and not any(graded(result) for result in results):
        return EXIT_NOTHING_GRADED
    return EXIT_GRADED
