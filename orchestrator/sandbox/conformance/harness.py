"""The conformance suite's machinery: what the checks run against, their registry and runner,
and the helpers every check uses."""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from orchestrator.sandbox.errors import SandboxError, Unsupported
from orchestrator.sandbox.models import SandboxSpec, Snapshot
from orchestrator.sandbox.protocol import Sandbox, SandboxBackend


class ConformanceFailure(AssertionError):
    """A backend does not do what the interface promises."""


@dataclass
class Target:
    """What the checks run against."""

    backend: SandboxBackend
    image: str  # an image with bash, coreutils and tar (the base image)
    run_id: str  # the run label of every sandbox the checks start
    registry: str | None = None  # host:port of a registry for the push/pull check
    image_repository: str = "swe-green-conformance"  # where checks put the images they make


class CheckResult(BaseModel):
    name: str
    outcome: Literal["passed", "failed", "unsupported"]
    message: str = ""
    seconds: float = 0.0


Check = Callable[[Target], None]


CHECKS: dict[str, Check] = {}


def check(fn: Check) -> Check:
    CHECKS[fn.__name__.removeprefix("check_")] = fn
    return fn


def run_checks(target: Target, names: list[str] | None = None) -> list[CheckResult]:
    """Run ``names`` (all checks by default), each on its own sandboxes."""
    results = []
    for name in names or list(CHECKS):
        started = time.monotonic()
        try:
            CHECKS[name](target)
            outcome, message = "passed", ""
        except Unsupported as exc:
            outcome, message = "unsupported", str(exc)
        except (ConformanceFailure, SandboxError) as exc:
            outcome, message = "failed", f"{type(exc).__name__}: {exc}"
        seconds = round(time.monotonic() - started, 2)
        results.append(CheckResult(name=name, outcome=outcome, message=message, seconds=seconds))
    return results


def expect(condition: object, message: str) -> None:
    if not condition:
        raise ConformanceFailure(message)


def expect_raises(error: type[Exception], call: Callable[[], object], what: str) -> None:
    """``call()`` must raise ``error`` (the interface's promise for ``what``)."""
    try:
        call()
    except error:
        return
    raise ConformanceFailure(f"{what} raised no {error.__name__}")


@contextmanager
def started(
    target: Target, source: str | Snapshot | None = None, **fields: object
) -> Iterator[Sandbox]:
    """A sandbox of ``target`` from ``source`` (default: the target's image), removed after."""
    fields.setdefault("run_id", target.run_id)
    fields.setdefault("instance_id", "conformance")
    fields.setdefault("role", "check")
    sandbox = target.backend.start(source or target.image, SandboxSpec(**fields))
    try:
        yield sandbox
    finally:
        sandbox.remove()


def scratch(sandbox: Sandbox) -> str:
    """A directory the checks may write in (a host path for the local backend)."""
    result = sandbox.exec("d=$(mktemp -d) && chmod 755 $d && echo $d", timeout=30)
    expect(result.ok, f"mktemp failed: {result.output}")
    return result.stdout.strip()


def tar_of(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
