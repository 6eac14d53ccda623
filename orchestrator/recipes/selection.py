"""Selecting tests by name: what the recipe's runner gets instead of the test files so that it
runs only some named tests. The decision is per runner, read off the recipe's test command:

- **pytest** (``pytest ...``, and sphinx's ``tox ... --``, whose arguments after ``--`` reach
  pytest): node ids instead of the test files, each cut before its parameters
  (``f.py::test_x[a-b]`` becomes ``f.py::test_x``, so every parametrization runs: a dataset
  id truncated at a space inside ``[...]`` is no valid node id, its function's is).
  Selected only when every name is ``file::...`` with a file the directives name; an
  instance's own ``-k`` selection (a task of test data) is kept.
- **sympy's** ``bin/test``: the same test files, with ``-k`` and the function names (every
  sympy version of the dataset has ``-k``; it matches names by substring, so it selects a
  superset). Selected only when every name is a plain identifier.
- **django's** ``runtests.py`` (the recipe's ``log_format`` is ``django``): the labels
  ``module.Class.test_x`` of the dataset's names ``test_x (module.Class)``
  (:func:`django_label`), only when asked (``django_labels``: a run of a few named tests, a
  deciding test run alone or ``swe-green inspect``'s FAIL_TO_PASS script) and when every
  name has one. Some names carry a docstring line and do not map back to a label, so
  validation's runs do not select django's tests: they run the whole files.
- **anything else** (the unittest-style runners): no selection, the whole test files run.

The selection reaches the eval script as the directives it passes the runner instead of the
test files (:func:`selected_directives`, ``run_tests(directives=...)``). A command longer
than :data:`MAX_COMMAND` (the kernel takes at most 128 KiB in one argument, and the command
is one) is not made: the whole files run.
"""

from __future__ import annotations

import re

from orchestrator.models import Instance
from orchestrator.recipes.recipe import Recipe, directives_of, suite_command

MAX_COMMAND = 64 * 1024
_PYTEST = re.compile(r"(^|\s|/)(pytest|tox)(\s|$)")
_SYMPY = re.compile(r"(^|\s|/)bin/test(\s|$)")
_DJANGO_NAME = re.compile(r"(?P<test>\w+) \((?P<case>[\w.]+)\)")


def runner_kind(recipe: Recipe) -> str:
    """``pytest``, ``sympy`` or ``other``: how the recipe's runner selects tests by name."""
    if _SYMPY.search(recipe.test_cmd):
        return "sympy"
    if _PYTEST.search(recipe.test_cmd):
        return "pytest"
    return "other"


def django_label(name: str) -> str | None:
    """The runner's label of a django test name (``test_x (app.tests.Case)`` ->
    ``app.tests.Case.test_x``); None for a name in another form."""
    match = _DJANGO_NAME.fullmatch(name)
    return f"{match['case']}.{match['test']}" if match else None


def selected_arguments(
    recipe: Recipe, instance: Instance, names: list[str], *, django_labels: bool = False
) -> list[str] | None:
    """What to pass the runner instead of the test directives so that it runs ``names``
    (and possibly more), or None when it cannot select them; django's tests by their labels
    only with ``django_labels`` (see the module doc)."""
    if django_labels and recipe.log_format == "django":
        labels = [label for label in map(django_label, names) if label is not None]
        return list(dict.fromkeys(labels)) if names and len(labels) == len(names) else None
    directives = directives_of(instance)
    if not names or not directives:
        return None
    kind = runner_kind(recipe)
    if kind == "pytest":
        ids = [name.split("[", 1)[0] for name in names]
        files, k = _k_split(directives)
        if not all("::" in node and node.split("::", 1)[0] in files for node in ids):
            return None
        return [*dict.fromkeys(ids), *k]
    if kind == "sympy" and all(name.isidentifier() for name in names):
        return [*directives, "-k", *dict.fromkeys(names)]
    return None


def _k_split(directives: list[str]) -> tuple[list[str], list[str]]:
    """The directives' test files, and their ``-k`` selection (an instance's own
    ``test_directives``), which a selection keeps: the parametrizations of a test function
    that its data names, not all of them."""
    if "-k" in directives[:-1]:
        at = directives.index("-k")
        return directives[:at], directives[at : at + 2]
    return directives, []


def selected_directives(
    recipe: Recipe, instance: Instance, names: list[str], *, django_labels: bool = False
) -> list[str] | None:
    """The directives that make the runner run only ``names`` of ``instance`` (a superset
    where it matches loosely), or None when it cannot select them or the command would be
    too long (:data:`MAX_COMMAND`); ``django_labels``: django's tests too, by their labels."""
    arguments = selected_arguments(recipe, instance, names, django_labels=django_labels)
    if arguments is None or len(suite_command(recipe, instance, arguments)) > MAX_COMMAND:
        return None
    return arguments
