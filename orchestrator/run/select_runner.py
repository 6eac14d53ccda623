"""Which runner a run's instances run on: this host, or the Ray cluster of ``ray_address``
(apart from :mod:`.runner`, which the Ray runner and its nodes build on: no cycle)."""

from __future__ import annotations

from orchestrator.run.runner import InstanceRunner, LocalRunner
from orchestrator.settings import Settings


def runner_for(settings: Settings) -> InstanceRunner:
    """The Ray runner when ``ray_address`` is set, else this host."""
    if settings.run.ray_address:
        from orchestrator.run.ray_runner import RayRunner

        return RayRunner.connect(settings)
    return LocalRunner()
