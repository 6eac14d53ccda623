"""The inferred set-up strategy: an environment from the repository's own files at the
environment's commit, with neither a recipe nor an LLM (:mod:`.inference`). The files are
read from the host's bare mirror with git (:mod:`.repo_files`) and parsed as data
(:mod:`.packaging_files`); whatever runs the repository's code (its build, its tests) runs
in the container."""

from __future__ import annotations

from orchestrator.errors import UserError
from orchestrator.models import Instance
from orchestrator.plan.env_plan import InferredPlan
from orchestrator.repos.git_commands import GitError
from orchestrator.repos.repo_cache import ensure_mirror
from orchestrator.settings import Settings
from orchestrator.setup.infer.inference import INFER_VERSION, infer_plan
from orchestrator.setup.infer.repo_files import RepoFiles

__all__ = ["INFER_VERSION", "InferenceFailed", "InferredPlan", "infer_environment"]


class InferenceFailed(Exception):
    """The repository's files at the environment's commit cannot be read."""


def infer_environment(settings: Settings, instance: Instance, available: list[str]) -> InferredPlan:
    """The environment inferred for ``instance`` from its repository at its
    ``environment_setup_commit`` (the commit its environment is built at), on one of the
    ``available`` Pythons."""
    commit = instance.environment_setup_commit or instance.base_commit
    try:
        mirror = ensure_mirror(settings, instance.repo, [commit])
        files = RepoFiles(mirror, commit)
    except (UserError, GitError) as exc:
        raise InferenceFailed(f"reading {instance.repo} at {commit[:12]}: {exc}") from exc
    names = [*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS]
    return infer_plan(files, instance.repo, instance.version, available, names)
