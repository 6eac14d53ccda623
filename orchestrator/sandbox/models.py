"""The data that crosses the sandbox interface: limits, an exec's result, containers, images."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from pydantic import BaseModel, Field

from orchestrator.settings.base import default_of
from orchestrator.settings.sandbox import SandboxConfig

# labels every container and image of this tool carries
LABEL_TOOL = "swe-green"
LABEL_RUN = "swe-green.run"
LABEL_INSTANCE = "swe-green.instance"
LABEL_ROLE = "swe-green.role"
LABEL_KIND = "swe-green.kind"
# the Ray node whose task started the container (runs on a cluster): per-node clean-up
LABEL_NODE = "swe-green.node"
# the environment key of an environment or instance image (kinds "env" and "instance")
LABEL_ENV_KEY = "swe-green.env-key"

TRUNCATION_MARKER = "\n[... output cut: {cut} more bytes not shown ...]\n"


class Limits(BaseModel):
    """What a sandbox may use."""

    # defaults: those of the settings (sandbox group)
    cpus: float = default_of(SandboxConfig, "cpus")
    memory: str = default_of(SandboxConfig, "memory")
    pids_limit: int = default_of(SandboxConfig, "pids_limit")
    output_limit: int = default_of(SandboxConfig, "exec_output_limit")
    # bytes the container may write (its writable layer); None: no budget
    disk: int | None = None
    # the disk watcher's slowest poll, seconds (it polls faster near the budget)
    disk_poll: float = default_of(SandboxConfig, "disk_poll")


class SandboxSpec(BaseModel):
    """How to start a sandbox: whose it is (run, instance, role: its labels), its limits,
    its network, environment variables, name and working directory."""

    run_id: str
    instance_id: str = ""
    role: str = "instance"
    limits: Limits = Field(default_factory=Limits)
    network: bool = True  # False: loopback only
    env: dict[str, str] = Field(default_factory=dict)
    name: str | None = None  # None: the backend picks one
    workdir: str = "/"
    # the cluster node that owns the sandbox (a run on Ray), "" on a single host
    node: str = ""

    def labels(self) -> dict[str, str]:
        return tool_labels(self.run_id, self.instance_id, self.role, node=self.node)


class Snapshot(BaseModel):
    """What a backend kept of a sandbox for others to start from (``SandboxBackend.keep``), or
    an image as one (:meth:`of_image`). The phases hold it and hand it back to ``start``;
    only the backend looks inside: an image where the engine commits, else (the restricted
    Docker policy) the files the sandbox changed, packed into a host file, over its image
    (:mod:`.file_snapshot`)."""

    name: str  # what it stands for (an image's name): cache keys and records use it
    image: str  # the image a sandbox starts from
    archive: Path | None = None  # the pack of changed files (``files.tar``), if any
    deleted: list[str] = Field(default_factory=list)  # paths the sandbox deleted
    size: int = 0  # bytes of ``archive``

    @classmethod
    def of_image(cls, name: str) -> Snapshot:
        """The image ``name`` itself."""
        return cls(name=name, image=name)

    def discard(self) -> None:
        """Delete what it holds on the host (an image stays: images have their own life)."""
        if self.archive is not None:
            self.archive.unlink(missing_ok=True)


class ExecResult(BaseModel):
    """One command's outcome; output past the output limit is cut with a marker."""

    exit_code: int | None
    stdout: str
    stderr: str
    duration: float
    timed_out: bool = False
    truncated: bool = False
    oom_killed: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def output(self) -> str:
        """stdout then stderr, as a person would read them."""
        if self.stdout and self.stderr:
            return self.stdout.rstrip("\n") + "\n" + self.stderr
        return self.stdout or self.stderr


class ContainerInfo(BaseModel):
    """A container of this tool, as listed by a backend."""

    model_config = {"frozen": True}

    id: str
    name: str
    status: str  # running, exited, created, paused, ...
    run_id: str = ""
    instance_id: str = ""
    role: str = ""
    created: str = ""  # RFC 3339
    image_id: str = ""
    labels: dict[str, str] = Field(default_factory=dict)


class ImageInfo(BaseModel):
    """An image, as listed by a backend."""

    id: str
    short_id: str = ""
    tags: list[str] = Field(default_factory=list)
    labels: dict[str, str] = Field(default_factory=dict)
    size: int = 0  # bytes, its parent's layers included
    parent: str = ""  # the parent image's id, when known
    created: str = ""  # RFC 3339


class OutputCap:
    """Keeps the first ``limit`` bytes of a stream and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.buf = bytearray()
        self.cut = 0

    def add(self, data: bytes) -> None:
        room = self.limit - len(self.buf)
        if room > 0:
            self.buf += data[:room]
        self.cut += max(0, len(data) - max(room, 0))

    def text(self) -> str:
        text = self.buf.decode("utf-8", errors="replace")
        return text + TRUNCATION_MARKER.format(cut=self.cut) if self.cut else text


def format_bytes(n: float) -> str:
    """``10 GiB``, ``200 MiB``, ``1.5 KiB``: sizes as the settings give them (powers of 1024)."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.4g} {unit}"
    return f"{int(n)} bytes"


def tool_labels(
    run_id: str, instance_id: str = "", role: str = "instance", *, node: str = ""
) -> dict[str, str]:
    """The labels of a container of this tool (the owning cluster node's when it has one)."""
    labels = {LABEL_TOOL: "1", LABEL_RUN: run_id, LABEL_INSTANCE: instance_id, LABEL_ROLE: role}
    if node:
        labels[LABEL_NODE] = node
    return labels


def epoch(stamp: str) -> float:
    """Docker's RFC 3339 time (nanoseconds, ``Z``) as epoch seconds; 0 when unreadable."""
    match = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?", stamp)
    if not match:
        return 0.0
    whole = dt.datetime.strptime(match[1], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.UTC)
    return whole.timestamp() + float(match[2] or 0)
