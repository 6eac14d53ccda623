"""The base run of validation needs only the FAIL_TO_PASS tests: a test command for them.

Validation runs the tests at the base commit only to see the FAIL_TO_PASS tests fail
(:mod:`.validation`). Where the recipe's runner selects tests by name, that run runs only
them; the decision is per runner, read off the recipe's test command:

- **pytest** (``pytest ...``, and sphinx's ``tox ... --``, whose arguments after ``--`` reach
  pytest): node ids instead of the test files, each cut before its parameters
  (``f.py::test_x[a-b]`` becomes ``f.py::test_x``, so every parametrization runs: a dataset
  id truncated at a space inside ``[...]`` is no valid node id, its function's is).
  Selected only when every FAIL_TO_PASS name is ``file::...`` with a file the directives name.
- **sympy's** ``bin/test``: the same test files, with ``-k`` and the FAIL_TO_PASS function
  names (every sympy version of the dataset has ``-k``; it matches names by substring, so
  it selects a superset). Selected only when every name is a plain identifier.
- **anything else** (django's ``runtests.py``, the unittest-style runners): no selection,
  the whole test files run. Django's dataset names (``test_x (module.Class)``, some with a
  docstring line) do not map back to labels reliably.

The gold reruns of flaky detection select the same way (:func:`rerun_names`): the listed
tests that passed in the first gold run, in the order they ran.

The selection reaches the eval script as the directives it passes the runner instead of the
test files (:func:`selected_directives`, ``run_tests(directives=...)``). A command longer
than :data:`MAX_COMMAND` (the kernel takes at most 128 KiB in one argument, and the command
is one) is not made: the whole files run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from orchestrator.grading.log_parsers import FAILING, PASSING, match_expected
from orchestrator.models import Instance, TestStatus
from orchestrator.spec.recipes import Recipe, test_command, test_directives

MAX_COMMAND = 64 * 1024
# a rerun selects only when it leaves out at least this share of the first run's tests that
# cost time (failed, errors, passed but not listed): else it runs what the first run ran
MIN_LEFT_OUT = 0.1
_PYTEST = re.compile(r"(^|\s|/)(pytest|tox)(\s|$)")
_SYMPY = re.compile(r"(^|\s|/)bin/test(\s|$)")


def runner_kind(recipe: Recipe) -> str:
    """``pytest``, ``sympy`` or ``other``: how the recipe's runner selects tests by name."""
    if _SYMPY.search(recipe.test_cmd):
        return "sympy"
    if _PYTEST.search(recipe.test_cmd):
        return "pytest"
    return "other"


def selected_arguments(recipe: Recipe, instance: Instance, names: list[str]) -> list[str] | None:
    """What to pass the runner instead of the test directives so that it runs ``names``
    (and possibly more), or None when it cannot select them (see the module doc)."""
    directives = test_directives(instance)
    if not names or not directives:
        return None
    kind = runner_kind(recipe)
    if kind == "pytest":
        ids = [name.split("[", 1)[0] for name in names]
        if not all("::" in node and node.split("::", 1)[0] in directives for node in ids):
            return None
        return list(dict.fromkeys(ids))
    if kind == "sympy" and all(name.isidentifier() for name in names):
        return [*directives, "-k", *dict.fromkeys(names)]
    return None


def selected_directives(recipe: Recipe, instance: Instance, names: list[str]) -> list[str] | None:
    """The directives that make the runner run only ``names`` of ``instance`` (a superset
    where it matches loosely), or None when it cannot select them or the command would be
    too long (:data:`MAX_COMMAND`)."""
    arguments = selected_arguments(recipe, instance, names)
    if arguments is None or len(test_command(recipe, instance, arguments)) > MAX_COMMAND:
        return None
    return arguments


def rerun_names(
    listed: list[str], first: Mapping[str, TestStatus], runner: str = "pytest"
) -> list[str] | None:
    """The tests a gold rerun needs: those of ``listed`` that passed in the first run
    (``first``: its outcomes), in the order they ran; None when leaving the others out would
    save little (under :data:`MIN_LEFT_OUT` of the tests that cost time), or when the runner
    cannot select (``runner``: :func:`runner_kind`). A test that failed in the first run
    cannot change the verdict by passing in a rerun: a PASS_TO_PASS one is left out of
    grading anyway, a FAIL_TO_PASS one has already failed the instance."""
    if runner == "other":
        return None
    matched = match_expected(listed, dict(first))
    wanted = {name for name in listed if matched[name] in PASSING}
    costly = [name for name, status in first.items() if status in FAILING or name not in wanted]
    costly = [name for name in costly if first[name] != TestStatus.SKIPPED]
    if not wanted or len(costly) < MIN_LEFT_OUT * len(first):
        return None
    order = {name: position for position, name in enumerate(first)}
    return sorted(wanted, key=lambda name: order.get(name, len(order)))
