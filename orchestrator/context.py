"""What every phase of one run needs: settings, the Docker client, the run's id and directory."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import docker
import structlog

from .log import get_logger
from .models import Instance
from .results import RunDir
from .settings import Settings


@dataclass
class RunContext:
    settings: Settings
    client: docker.DockerClient
    run_id: str
    run_dir: RunDir
    log: structlog.typing.FilteringBoundLogger = field(init=False)

    def __post_init__(self) -> None:
        self.log = get_logger(run_id=self.run_id)

    def instance_dir(self, instance: Instance) -> Path:
        return self.run_dir.instance_dir(instance.instance_id)

    def instance_log(self, instance: Instance) -> structlog.typing.FilteringBoundLogger:
        return self.log.bind(instance_id=instance.instance_id)
