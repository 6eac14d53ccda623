"""A recipe's local services run for the tests, with the network off (httpbin for requests)."""

from __future__ import annotations

import pytest

from orchestrator.environments.build import prepare_instance
from orchestrator.environments.prepared import recipe_of
from orchestrator.grading.evaluation import run_tests
from orchestrator.models import CaseStatus

pytestmark = pytest.mark.container
# succeeds only with the network on (the package index is the one host containers reach)
PYPI_PROBE = "python3 -m pip download -q --no-deps --timeout 5 --retries 0 six==1.16.0 -d /tmp/p"

SERVICE_TEST = "tests/test_calc.py::test_local_service_answers"


@pytest.mark.parametrize("with_services", [True, False])
def test_a_local_service_answers_the_tests_with_the_network_off(
    run_ctx, synthetic_instances, make_sandbox, with_services
):
    instance = synthetic_instances["demo__calc-1"]
    prepared = prepare_instance(run_ctx, instance)
    recipe = recipe_of(prepared)
    assert recipe.services  # the synthetic recipe declares one
    if not with_services:
        recipe = recipe.model_copy(update={"services": []})
    sandbox = make_sandbox(prepared.instance_image)
    run = run_tests(sandbox, instance, recipe, timeout=120)
    expected = CaseStatus.PASSED if with_services else CaseStatus.FAILED
    assert run.outcomes[SERVICE_TEST] == expected, run.output[-2000:]
    # the network stayed off: only loopback
    assert sandbox.exec(PYPI_PROBE, timeout=60).exit_code != 0
    # the service is stopped after the run
    assert sandbox.exec("pgrep -f '[h]ttp.server 8766'").exit_code != 0


@pytest.mark.parametrize("runs", [1, 2])
def test_validation_runs_the_gold_tests_n_times_and_leaves_flaky_ones_out(
    run_ctx, synthetic_instances, runs
):
    from orchestrator.validation.validation import validate

    instance = synthetic_instances["demo__calc-1"]
    prepared = prepare_instance(run_ctx, instance)
    run_ctx.settings = run_ctx.settings.replace(**{"validation_runs": runs})
    check = validate(run_ctx, instance, prepared.snapshot, recipe_of(prepared))
    assert check.ok, check.message
    flaky = ["tests/test_calc.py::test_flaky_between_runs"]
    assert check.flaky == (flaky if runs == 2 else [])
    assert (flaky[0] in check.excluded_p2p) is (runs == 2)
    if runs == 2:
        assert "1 flaky" in check.message
