"""Phase 2: environment set-up. :func:`set_up` decides nothing itself: the plan
(:mod:`.plan`: strategy, Python, pins and cache keys, from the recipes and the base images of
:mod:`.images`) picks a :class:`~.strategy.SetupStrategy` (a recipe, or the LLM agent of
:mod:`.agent`), which makes the virtual environment and the activate script of the container
contract (:mod:`sandbox_tools.contract`)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.context.run_context import RunContext
from orchestrator.models import Instance
from orchestrator.plan.env_plan import EnvPlan
from orchestrator.sandbox import Sandbox
from orchestrator.settings import Settings
from orchestrator.setup.strategy import SetUp, setup_strategy
from sandbox_tools.contract import ACTIVATE


def set_up(
    ctx: RunContext, instance: Instance, plan: EnvPlan, sandbox: Sandbox, log_path: Path,
    venv_ready: bool = False,
) -> SetUp:  # fmt: skip
    """Phase 2 in ``sandbox`` (network on, the repository checked out): the plan's strategy
    makes the environment. Raises :class:`~orchestrator.sandbox.scripts.ScriptFailed`."""
    return setup_strategy(ctx, instance, plan).set_up(sandbox, log_path, venv_ready)


def check_strategy_settings(settings: Settings) -> None:
    """A UserError when the chosen strategy cannot run (``llm`` without an API key, or with a
    limit that is not positive): before any container starts."""
    if settings.environment.setup_strategy == "llm":
        from orchestrator.setup.agent.setup_llm import check_llm_settings

        check_llm_settings(settings)


def venv_python(sandbox: Sandbox) -> str:
    """The version of the Python the environment activates (empty if it cannot tell)."""
    found = sandbox.exec(
        f"source {ACTIVATE} >/dev/null 2>&1; python -c "
        "'import platform; print(platform.python_version())'",
        timeout=60,
    )
    return found.stdout.strip().splitlines()[-1] if found.ok and found.stdout.strip() else ""
