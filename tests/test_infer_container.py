"""The inferred set-up strategy end to end: a synthetic instance's environment built from its
repository's own files (no recipe read), then validated as a recipe's is; one that fails
validation says why."""

from __future__ import annotations

import pytest

from orchestrator.validation.sweep import sweep_instance

pytestmark = pytest.mark.container


def test_a_synthetic_instance_validates_in_its_inferred_environment(run_ctx, synthetic_instances):
    run_ctx.settings = run_ctx.settings.replace(setup_strategy="infer")
    instance = synthetic_instances["demo__calc-1"]
    record = sweep_instance(run_ctx, instance)
    assert record.ok, record.message
    assert record.setup_strategy == "infer"
    log = (run_ctx.instance_dir(instance) / "setup.log").read_text()
    assert ">>> installed as of" in log  # resolved with a date cut-off
    assert "pip install --no-build-isolation -e ." not in log  # not the recipe's install


def test_an_inferred_environment_that_fails_validation_says_why(run_ctx, synthetic_instances):
    # textkit's runner is a django-style runtests.py at the top, which no inference knows:
    # pytest runs its unittest tests under other names than the dataset's
    run_ctx.settings = run_ctx.settings.replace(setup_strategy="infer")
    record = sweep_instance(run_ctx, synthetic_instances["demo__textkit-1"])
    assert not record.ok
    assert (record.stage, record.setup_strategy) == ("validation", "infer")
    assert record.cause and record.message
