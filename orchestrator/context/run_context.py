"""What every phase of one run needs: settings, the sandbox backend, the run's id and directory."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from orchestrator.context.run_dir import RunDir
from orchestrator.housekeeping.image_use import record_image_use
from orchestrator.housekeeping.names import container_name, unique_container_name
from orchestrator.leases import note_image
from orchestrator.log import get_logger
from orchestrator.models import Instance
from orchestrator.sandbox import (
    Limits,
    NameTaken,
    Sandbox,
    SandboxBackend,
    SandboxError,
    SandboxSpec,
    Snapshot,
)
from orchestrator.settings import Settings

# the containers whose disk use is budgeted (setting disk_limit)
DISK_BUDGET_ROLES = ("participant", "grading")  # grading: every run of a grading


@dataclass
class RunContext:
    settings: Settings
    backend: SandboxBackend
    run_id: str
    run_dir: RunDir
    # the Ray node this context runs on ("" on a single host): its containers carry it
    node: str = ""
    log: structlog.typing.FilteringBoundLogger = field(init=False)
    # set when the run is interrupted: no new container starts after that
    cancelled: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.log = get_logger(run_id=self.run_id)

    def instance_dir(self, instance: Instance) -> Path:
        return self.run_dir.instance_dir(instance.instance_id)

    def instance_log(self, instance: Instance) -> structlog.typing.FilteringBoundLogger:
        return self.log.bind(instance_id=instance.instance_id)

    def limits(self, role: str = "") -> Limits:
        """The container limits; participant and grading containers get the disk budget."""
        s = self.settings.sandbox
        return Limits(
            cpus=s.cpus, memory=s.memory, pids_limit=s.pids_limit, output_limit=s.exec_output_limit,
            disk=s.disk_bytes() if role in DISK_BUDGET_ROLES else None, disk_poll=s.disk_poll,
        )  # fmt: skip

    def start_sandbox(
        self, source: str | Snapshot, instance: Instance, role: str, *, network: bool
    ) -> Sandbox:
        """A container of this run for ``instance``, with the configured limits; from an image
        or a :class:`Snapshot` the backend returned."""
        if self.cancelled.is_set():
            raise SandboxError("the run was interrupted")
        # named for what it holds, so that `docker ps -a` alone tells what is what
        name = container_name(self.run_id, instance.instance_id, role)
        for attempt in range(3):
            try:
                spec = SandboxSpec(
                    run_id=self.run_id, instance_id=instance.instance_id, role=role,
                    limits=self.limits(role), network=network,
                    name=unique_container_name(self.backend, name, suffixed=attempt > 0),
                    node=self.node,
                )  # fmt: skip
                sandbox = self.backend.start(source, spec)
            except NameTaken:
                if attempt == 2:
                    raise
                continue  # another container took the name meanwhile: a suffixed one
            record_image_use(self.settings.storage.data_dir, sandbox.image)
            note_image(self.run_id, sandbox.image)
            return sandbox
        raise AssertionError("unreachable")
