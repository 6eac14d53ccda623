"""The command ``swe-green inspect`` prints to re-run a failure's FAIL_TO_PASS tests selects
them by name for every runner of the recipes (no container: the selection itself)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("instance_id", "expected", "kind"),
    [
        (
            "django__django-11099",
            "auth_tests.test_validators.UsernameValidatorsTests.test_ascii_validator",
            "django labels",
        ),
        ("sphinx-doc__sphinx-9711", "tests/test_extension.py::test_needs_extensions", "pytest"),
        ("sympy__sympy-17630", "test_issue_17624", "sympy"),
        (
            "pytest-dev__pytest-5262",
            "testing/test_capture.py::TestFDCapture::test_capfd_sys_stdout_mode",
            "pytest",
        ),
    ],
)
def test_every_recipe_runner_selects_the_fail_to_pass_tests_by_name(
    instance_id: str, expected: str, kind: str
) -> None:
    """django's runner (labels), sphinx's tox (node ids after ``--``), sympy's bin/test (``-k``)
    and pytest: the FAIL_TO_PASS script names the real instances' FAIL_TO_PASS tests."""
    from orchestrator.dataset.instances import load_instances
    from orchestrator.recipes.recipe import load_recipes
    from orchestrator.run.rerun import fail_to_pass_directives

    from .reference_data import VERIFIED

    [instance] = [i for i in load_instances(str(VERIFIED)) if i.instance_id == instance_id]
    recipe = load_recipes()[(instance.repo, instance.version)]
    chosen, said = fail_to_pass_directives(recipe, instance)
    assert chosen is not None and expected in chosen
    assert f"({kind})" in said
