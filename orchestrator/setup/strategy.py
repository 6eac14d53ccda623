"""Phase 2's strategies: a :class:`SetupStrategy` makes an environment in a container and
says what phase 3 installs; :func:`setup_strategy` picks one for an instance's plan.

- :class:`RecipeStrategy`: a known recipe for ``(repo, version)``: the Python, a virtual
  environment and the activate script (:mod:`.scripts`); phase 3 installs the recipe's pins
  and runs its install commands.
- :class:`InferredStrategy`: the recipe inferred from the repository's own files
  (:mod:`.infer`), built as a recipe is.
- :class:`LlmStrategy`: the setup agent (:mod:`.agent`) reads the packaging files and builds
  the environment with tool use, phase 3's install included.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, Field

from orchestrator.context.run_context import RunContext
from orchestrator.errors import UserError
from orchestrator.models import Instance
from orchestrator.plan.env_plan import EnvPlan
from orchestrator.plan.install import install_script
from orchestrator.sandbox import Sandbox
from orchestrator.sandbox.scripts import Script, ScriptFailed, run_script
from orchestrator.setup.scripts import environment_script
from sandbox_tools.contract import PYTHON_MIRROR_DIR


class SetUp(BaseModel):
    """What phase 2 found and hands on: phase 3's install, and what the environment image's
    labels keep for later cache hits."""

    install: Script | None = None  # None: the strategy installed the dependencies itself
    test_cmd: str | None = None  # the LLM's test command (a recipe has its own)
    reinstall: str | None = None  # what installs the project again at another commit
    tokens: dict[str, int] = Field(default_factory=dict)


class SetupStrategy(Protocol):
    """Makes an environment in a container whose repository is checked out (phase 1)."""

    name: str

    def set_up(self, sandbox: Sandbox, log_path: Path, venv_ready: bool) -> SetUp:
        """Make the environment; raise :class:`ScriptFailed` saying why it could not.
        ``venv_ready``: the container's image has the virtual environment already."""
        ...


class RecipeStrategy:
    """The recipe's Python and virtual environment; its install is phase 3's."""

    name = "recipe"

    def __init__(self, ctx: RunContext, plan: EnvPlan) -> None:
        assert plan.recipe is not None
        self.ctx, self.plan, self.recipe = ctx, plan, plan.recipe

    def set_up(self, sandbox: Sandbox, log_path: Path, venv_ready: bool) -> SetUp:
        plan, settings = self.plan, self.ctx.settings.environment
        mirror_env = _put_python_mirror(self.ctx, sandbox) if plan.fetch_python else {}
        script = environment_script(
            self.recipe, plan.pins, plan.fetch_python, python_env=mirror_env, venv_ready=venv_ready
        )
        run_script(sandbox, script, log_path, settings.install_timeout)
        return SetUp(install=install_script(self.recipe, plan.pins))


class InferredStrategy(RecipeStrategy):
    """The inferred recipe's Python and virtual environment; its install is phase 3's."""

    name = "infer"


class LlmStrategy:
    """The setup agent: phases 2 and 3 in its own loop, bounded by turns, tokens and time;
    from the inferred environment and its failure when ``auto`` falls back to it."""

    name = "llm"

    def __init__(self, ctx: RunContext, instance: Instance, plan: EnvPlan) -> None:
        self.ctx, self.instance, self.plan = ctx, instance, plan

    def set_up(self, sandbox: Sandbox, log_path: Path, venv_ready: bool) -> SetUp:
        from orchestrator.setup.agent.setup_llm import run_llm_setup
        from orchestrator.setup.agent.setup_models import SetupFacts

        facts = SetupFacts.from_instance(self.instance, self.plan.fallback_from or "")
        result = run_llm_setup(sandbox, facts, self.ctx.settings.setup_agent, log_path.parent)
        if not result.success:
            raise ScriptFailed(result.failure_reason or "the setup agent did not finish")
        return SetUp(
            test_cmd=result.test_command or None,
            reinstall="\n".join(result.install_commands) or None,
            tokens={"input": result.input_tokens, "output": result.output_tokens},
        )


def setup_strategy(ctx: RunContext, instance: Instance, plan: EnvPlan) -> SetupStrategy:
    """The strategy the plan chose (``auto`` settles to one of the three when planned)."""
    if plan.strategy == "recipe":
        return RecipeStrategy(ctx, plan)
    if plan.strategy == "infer":
        return InferredStrategy(ctx, plan)
    return LlmStrategy(ctx, instance, plan)


def _put_python_mirror(ctx: RunContext, sandbox: Sandbox) -> dict[str, str]:
    """The environment for ``uv python install`` from the configured mirror: a URL is passed
    on; a host directory is copied into the set-up container (removed by the script, so it
    is in no image)."""
    mirror = ctx.settings.environment.python_mirror
    if not mirror:
        return {}
    if re.match(r"^(https?|file)://", mirror):
        return {"UV_PYTHON_INSTALL_MIRROR": mirror}
    path = Path(mirror).expanduser()
    if not path.is_dir():
        raise UserError(
            f"Python mirror {mirror} is neither a URL nor a directory.",
            "set SWE_GREEN_PYTHON_MIRROR to an http(s) URL or a directory of Python builds.",
        )
    sandbox.put_dir(path, PYTHON_MIRROR_DIR)
    return {"UV_PYTHON_INSTALL_MIRROR": f"file://{PYTHON_MIRROR_DIR}"}
