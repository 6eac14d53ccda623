"""What phases 1-4 hand to the rest of an instance's run."""

from __future__ import annotations

from pydantic import BaseModel, Field

from orchestrator.plan.env_plan import EnvPlan
from orchestrator.recipes.recipe import Recipe
from orchestrator.sandbox import Snapshot


class PreparedInstance(BaseModel):
    """The images an instance runs from, and what it cost to get them."""

    plan: EnvPlan
    env_image: str
    # what the instance's containers start from, as the backend kept it: the instance image,
    # or (a backend that does not commit) the set-up's files on the host over an image
    snapshot: Snapshot
    env_cache_hit: bool
    instance_cache_hit: bool
    test_cmd: str | None = None
    setup_tokens: dict[str, int] = Field(default_factory=dict)
    timings: dict[str, float] = Field(default_factory=dict)
    python_used: str = ""  # the environment's Python (a cached image built before: unknown)

    @property
    def instance_image(self) -> str:
        """The instance image's name (what the snapshot stands for)."""
        return self.snapshot.name

    def discard(self) -> None:
        """Delete what the instance's containers started from, when it is a host file."""
        self.snapshot.discard()


def recipe_of(prepared: PreparedInstance) -> Recipe:
    """The recipe that says how to run the tests (the LLM's test command if no recipe)."""
    if prepared.plan.recipe is not None:
        return prepared.plan.recipe
    return Recipe(
        repo="",
        version="",
        python=prepared.plan.python,
        install="",
        test_cmd=prepared.test_cmd or "pytest -rA",
        log_format="pytest",
    )
