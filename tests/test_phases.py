"""The tree shows the phases: each is a package with one entry function named for it, and
``run_instance`` calls them in order."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# (package, entry, what its docstring says first), in the order an instance meets them
PHASES = [
    ("orchestrator.checkout", "check_out", "Phase 1"),
    ("orchestrator.setup", "set_up", "Phase 2"),
    ("orchestrator.dependencies", "install_dependencies", "Phase 3"),
    ("orchestrator.base_commit", "prepare_base_commit", "Phase 4"),
    ("orchestrator.validation", "validate", ""),
    ("orchestrator.participant", "dispatch", "Phase 5"),
    ("orchestrator.patches", "take_patch", "Phase 6"),
    ("orchestrator.grading", "grade", ""),
]


@pytest.mark.parametrize(("package", "entry", "says"), PHASES)
def test_each_phase_is_a_package_with_its_entry(package: str, entry: str, says: str) -> None:
    module = importlib.import_module(package)
    assert module.__file__ and module.__file__.endswith("__init__.py")
    function = getattr(module, entry)
    assert callable(function) and inspect.getdoc(function)
    assert f":func:`{entry}`" in (module.__doc__ or "") or entry in (module.__doc__ or "")
    if says:
        assert (inspect.getdoc(function) or "").startswith(says)


def _calls(function: ast.AST) -> list[str]:
    """The names of the methods and functions ``function`` awaits, in order."""
    names = []
    for node in ast.walk(function):
        if isinstance(node, ast.Await) and isinstance(node.value, ast.Call):
            target = node.value.func
            names.append(target.attr if isinstance(target, ast.Attribute) else ast.unparse(target))
    return names


def test_run_instance_reads_as_the_phases_in_order() -> None:
    tree = ast.parse((ROOT / "orchestrator" / "run" / "pipeline.py").read_text())
    [run_instance] = [
        n for n in tree.body if isinstance(n, ast.AsyncFunctionDef) and n.name == "run_instance"
    ]
    calls = [c for c in _calls(run_instance) if c != "finish"]
    assert calls == [
        "environment", "base_commit", "validate", "dispatch", "take_patch", "grade",
    ]  # fmt: skip
    # and the environment image runs phases 1-3 in order when no cache has it
    tree = ast.parse((ROOT / "orchestrator" / "environments" / "env_image.py").read_text())
    [build] = [
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "build_env_image"
    ]
    called = [
        n.func.id
        for n in ast.walk(build)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    ]
    phases = [c for c in called if c in ("check_out", "set_up", "install_dependencies")]
    assert phases == ["check_out", "set_up", "install_dependencies"]


def test_every_participant_is_a_participant_and_travels_to_a_worker() -> None:
    """The pipeline takes a Participant; each kind pickles (a Ray job carries it), and a
    predictions file's job carries its own instance's patch only."""
    import asyncio
    import pickle

    from orchestrator.models import Instance
    from orchestrator.participant.client import ParticipantLimits
    from orchestrator.participant.predictions import Predictions
    from orchestrator.participant.protocol import (
        A2AParticipant,
        Participant,
        PredictionsParticipant,
        Workspace,
    )

    a2a = A2AParticipant(url="http://127.0.0.1:9/")
    predicted = PredictionsParticipant(
        predictions=Predictions(source="p.jsonl", model="m", patches={"a-1": "diff", "b-2": None})
    )
    for participant in (a2a, predicted):
        assert isinstance(participant, Participant)
        assert pickle.loads(pickle.dumps(participant)) == participant
    assert a2a.works_in_container and not predicted.works_in_container
    assert predicted.for_instance("a-1").predictions.patches == {"a-1": "diff"}
    instance = Instance(
        instance_id="b-2", repo="o/r", base_commit="0" * 40, environment_setup_commit="0" * 40
    )
    workspace = Workspace(tools=None, limits=ParticipantLimits(), transcript=Path("t.jsonl"))
    outcome = asyncio.run(predicted.for_instance("b-2").solve(instance, workspace))
    assert outcome.patch == "" and outcome.reason is None  # no patch: graded as an empty one


def test_the_setup_strategy_is_the_plans() -> None:
    from orchestrator.setup.strategy import LlmStrategy, RecipeStrategy, SetupStrategy

    for strategy in (RecipeStrategy, LlmStrategy):
        assert strategy.name in ("recipe", "llm")
        assert callable(strategy.set_up)
    assert set(inspect.signature(SetupStrategy.set_up).parameters) == {
        "self", "sandbox", "log_path", "venv_ready",
    }  # fmt: skip


def test_envs_plan_never_loads_the_llm_setup_agent() -> None:
    """``envs plan`` of a recipe reads the plan, never the LLM set-up agent (nor anthropic)."""
    import subprocess
    import sys

    from .reference_data import VERIFIED

    code = (
        "import sys\n"
        "from orchestrator.frontends.cli.commands_envs import envs_plan\n"
        "envs_plan('psf__requests-2317', as_json=True)\n"
        "agent = ('orchestrator.setup.agent', 'anthropic')\n"
        "loaded = [m for m in sys.modules if m.startswith(agent)]\n"
        "print('loaded:', loaded, file=sys.stderr)\n"
    )
    env = {**os.environ, "SWE_GREEN_DATASET": str(VERIFIED)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert '"name": "install"' in done.stdout
    assert "loaded: []" in done.stderr


def test_envs_plan_shows_the_recipe_install_as_data(monkeypatch, capsys) -> None:
    """``envs plan`` prints phases 2 and 3 of a real instance's recipe as steps (JSON)."""
    import json

    from orchestrator.frontends.cli.commands_envs import envs_plan

    from .reference_data import VERIFIED

    monkeypatch.setenv("SWE_GREEN_DATASET", str(VERIFIED))
    envs_plan("psf__requests-2317", as_json=True)
    scripts = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in scripts] == ["setup", "install"]
    titles = [step["title"] for step in scripts[1]["steps"]]
    assert titles[:2] == ["build tools", "pinned packages"] and "install" in titles
    assert "pytest==" in scripts[1]["steps"][1]["bash"]
