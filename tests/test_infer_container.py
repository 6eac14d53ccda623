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


def test_auto_hands_a_failing_inferred_environment_to_the_llm_agent(run_ctx, synthetic_instances):
    """No recipe (auto, no recipes file): the inferred environment is built and fails
    validation; the LLM agent (a fake API) is then asked, its first message holding the
    inferred plan and the failure, and its environment is the one validated."""
    from .fake_anthropic import FakeAnthropic, Reply, bash, text, tool_use

    install = "pip install -q --no-build-isolation --no-index --no-use-pep517 -e ."
    script = [
        bash(f"python3 -m venv /opt/swe/venv && cd /testbed && /opt/swe/venv/bin/{install}"),
        Reply([text("Ready."), tool_use("finish", {
            "python_version": "3.11", "venv_path": "/opt/swe/venv",
            "test_command": "python runtests.py --verbosity 2", "install_commands": [install],
        })]),
    ]  # fmt: skip
    with FakeAnthropic(script) as fake:
        run_ctx.settings = run_ctx.settings.replace(
            **{
                "setup_strategy": "auto",
                "recipes_file": None,
                "anthropic_api_key": "test",
                "anthropic_base_url": fake.url,
                "setup_model": "claude-test-infer-fallback",  # a cache key of its own
            }
        )
        record = sweep_instance(run_ctx, synthetic_instances["demo__textkit-1"])
        assert len(fake.requests) == 2
    first = fake.requests[0]["messages"][0]["content"]
    first = first if isinstance(first, str) else " ".join(c.get("text", "") for c in first)
    assert "tried first and failed" in first
    assert "It failed: environment validation:" in first
    assert "test command: pytest -rA" in first  # the inferred plan it starts from
    assert record.setup_strategy == "llm"


def test_a_legacy_build_is_built_on_the_requirements_installed_before_it(run_ctx, tmp_path_factory):
    """A setup.py with no ``[build-system]`` that imports a library to build: the inference
    installs it first and builds the project without isolation, on it (uv would otherwise
    build the bare path's metadata in an isolated environment that lacks it)."""
    from dataclasses import replace

    from orchestrator.dataset.synthetic_repos import CALC

    setup_py = (
        "from setuptools import setup\n\nimport six  # the build needs it\n\n"
        "setup(name='legacycalc', version=six.ensure_str('0.1'), packages=['calc'])\n"
    )
    files = {k: v for k, v in CALC.setup_files.items() if k != "pyproject.toml"}
    spec = replace(CALC, repo="demo/legacycalc", instance_id="demo__legacycalc-1",
                   setup_files={**files, "setup.py": setup_py})  # fmt: skip
    log = _inferred_setup_log(run_ctx, tmp_path_factory.mktemp("legacy"), spec)
    assert "first=(six " in log and "legacycalc @ ." in log


def test_a_build_demanding_a_setuptools_newer_than_the_cap_gets_it(run_ctx, tmp_path_factory):
    """A ``[build-system]`` that needs a setuptools newer than the build constraints' cap
    (PEP 639's license string, which older setuptools reject): the constraint is its own
    requirement, and the project builds in isolation on it."""
    from dataclasses import replace

    from orchestrator.dataset.synthetic_repos import CALC

    pyproject = (
        '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n'
        '\n[project]\nname = "newcalc"\nversion = "0.1"\nlicense = "MIT"\n'
        '\n[tool.setuptools]\npackages = ["calc"]\n'
    )
    spec = replace(CALC, repo="demo/newcalc", instance_id="demo__newcalc-1",
                   setup_files={**CALC.setup_files, "pyproject.toml": pyproject})  # fmt: skip
    log = _inferred_setup_log(run_ctx, tmp_path_factory.mktemp("newsetuptools"), spec)
    assert "no-build-isolation" not in log


def _inferred_setup_log(run_ctx, root, spec) -> str:  # noqa: ANN001
    """The synthetic repository ``spec``'s instance validated in its inferred environment
    (the validation must pass); its set-up log."""
    from orchestrator.dataset.instances import load_instances
    from orchestrator.dataset.synthetic import build_synthetic

    where = build_synthetic(root, repos=[spec])
    run_ctx.settings = run_ctx.settings.replace(
        setup_strategy="infer", dataset=str(where / "instances.jsonl"),
        mirror_dir=where / "mirrors",
    )  # fmt: skip
    (instance,) = load_instances(str(where / "instances.jsonl"))
    record = sweep_instance(run_ctx, instance)
    assert record.ok, record.message
    return (run_ctx.instance_dir(instance) / "setup.log").read_text()
