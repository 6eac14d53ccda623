"""How an instance's environment is built: the plan a set-up strategy makes
(:class:`EnvPlan`, with the inferred environment's account of itself, :class:`InferredPlan`),
which phases 2-4 and the image cache all read."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from orchestrator.models import Instance
from orchestrator.recipes.recipe import Recipe


class InferredPlan(BaseModel):
    """An environment inferred from a repository's files, and why each part is what it is."""

    recipe: Recipe
    commit: str
    commit_time: datetime
    cutoffs: list[str] = Field(default_factory=list)  # --exclude-newer tried in turn; "" none
    requirements: list[str] = Field(default_factory=list)
    build_first: list[str] = Field(default_factory=list)
    runner: str = ""  # the test runner installed last, and as of when
    # Debian packages installed first (those the base image's release has), and those the
    # CI installs that are left out, with why
    system_packages: list[str] = Field(default_factory=list)
    system_left_out: dict[str, str] = Field(default_factory=dict)
    reasons: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)
    # what the packaging files hold that the inference met and could not read, with why
    unread: list[str] = Field(default_factory=list)

    def text(self) -> str:
        """The plan as a person reads it (``swe-green envs plan``)."""
        r = self.recipe
        lines = [
            f"{r.repo} {r.version} at {self.commit[:12]} ({self.commit_time:%Y-%m-%d %H:%M} UTC)",
            f"  python:       {r.python}",
            f"  test command: {r.test_cmd}   (log format {r.log_format})",
            f"  resolved as of: {', then '.join(c or 'no cut-off' for c in self.cutoffs)}",
            f"  requirements: {' '.join(self.requirements) or '-'}",
        ]
        if self.runner:
            lines.append(f"  test runner:  {self.runner}")
        if self.build_first:
            lines.append(f"  build first:  {' '.join(self.build_first)}")
        if self.system_packages:
            lines.append(f"  system (apt): {' '.join(self.system_packages)}")
        if self.system_left_out:
            lines.append(f"  not (apt):    {' '.join(self.system_left_out)}")
        lines.append(f"  read:         {', '.join(self.sources) or 'nothing'}")
        lines += [f"  not read:     {item}" for item in self.unread]
        lines += ["  why:"] + [f"    - {reason}" for reason in self.reasons]
        if r.pre_install:
            lines += ["  pre-install:"] + [
                f"    {line}" for step in r.pre_install for line in step.splitlines()
            ]
        lines += ["  install:"] + [f"    {line}" for line in r.install.splitlines()]
        return "\n".join(lines)


class EnvPlan(BaseModel):
    """How the environment of one instance is built, and the cache keys that follow."""

    strategy: Literal["recipe", "infer", "llm"]
    recipe: Recipe | None = None  # a recipe's, or the inferred one
    # the inferred plan's account of itself (strategy infer): what it read and why
    inferred: InferredPlan | None = None
    # why the plan is not the strategy auto tried first (an inferred environment that
    # failed: the LLM agent starts from it)
    fallback_from: str | None = None
    python: str
    python_exact: bool = True
    base_image: str
    pins: list[str] = Field(default_factory=list)
    env_key: str
    fetch_python: str | None = None  # a Python to `uv python install` first, if any
    # the recipe's own environment (its pins alone), when this one differs from it only by
    # the instance's own pins: built on it, adding ``own_pins`` (setting share_layers)
    family_key: str | None = None
    own_pins: list[str] = Field(default_factory=list)

    def instance_key(self, instance: Instance) -> str:
        raw = f"{self.env_key}:{instance.base_commit}:{json.dumps(self.pins)}"
        return hashlib.sha256(raw.encode()).hexdigest()[:16]

    def family(self) -> EnvPlan:
        """The plan of the recipe's own environment, which this one adds its pins to."""
        assert self.recipe is not None and self.family_key is not None
        return self.model_copy(
            update={
                "pins": list(self.recipe.packages),
                "env_key": self.family_key,
                "family_key": None,
                "own_pins": [],
            }
        )
