"""The base run of validation needs only the FAIL_TO_PASS tests: a test command for them.

Validation runs the tests at the base commit only to see the FAIL_TO_PASS tests fail
(:mod:`.validation`). Where the recipe's runner selects tests by name, that run runs only
them (:func:`orchestrator.recipes.selection.selected_directives`: pytest node ids, sympy's
``-k``); elsewhere, django's ``runtests.py`` included, the whole test files run.

The gold reruns of flaky detection select the same way (:func:`rerun_names`): the listed
tests that passed in the first gold run, in the order they ran.
"""

from __future__ import annotations

from collections.abc import Mapping

from orchestrator.grading.log_parsers import FAILING, PASSING, match_expected
from orchestrator.models import CaseStatus

# a rerun selects only when it leaves out at least this share of the first run's tests that
# cost time (failed, errors, passed but not listed): else it runs what the first run ran
MIN_LEFT_OUT = 0.1


def rerun_names(
    listed: list[str], first: Mapping[str, CaseStatus], runner: str = "pytest"
) -> list[str] | None:
    """The tests a gold rerun needs: those of ``listed`` that passed in the first run
    (``first``: its outcomes), in the order they ran; None when leaving the others out would
    save little (under :data:`MIN_LEFT_OUT` of the tests that cost time), or when the runner
    cannot select (``runner``: :func:`orchestrator.recipes.selection.runner_kind`). A test
    that failed in the first run cannot change the verdict by passing in a rerun: a
    PASS_TO_PASS one is left out of grading anyway, a FAIL_TO_PASS one has already failed
    the instance."""
    if runner == "other":
        return None
    matched = match_expected(listed, dict(first))
    wanted = {name for name in listed if matched[name] in PASSING}
    costly = [name for name, status in first.items() if status in FAILING or name not in wanted]
    costly = [name for name in costly if first[name] != CaseStatus.SKIPPED]
    if not wanted or len(costly) < MIN_LEFT_OUT * len(first):
        return None
    order = {name: position for position, name in enumerate(first)}
    return sorted(wanted, key=lambda name: order.get(name, len(order)))
