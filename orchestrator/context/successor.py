"""A fresh sandbox from a finished one: its files, none of its processes.

What ran in a sandbox (a patch's build, as root) may have left processes that re-fork faster
than any snapshot of process ids can follow. A new sandbox started from the old one's files
holds none of them by construction: the old one is stopped (its PID namespace ends with its
init), kept (a commit, or under the restricted Docker policy its changed files packed on the
host: :meth:`.SandboxBackend.keep`), and a new one started from what was kept. The kept image
or pack and the new sandbox are removed when the caller is done, on errors and cancels too;
the old sandbox stays the caller's, stopped.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

from orchestrator.context.run_context import RunContext
from orchestrator.image_names import successor_image_name
from orchestrator.models import Instance
from orchestrator.sandbox import Sandbox
from orchestrator.sandbox.models import LABEL_KIND

# given a finished sandbox, a context in which a fresh one from its files exists
Successor = Callable[[Sandbox], AbstractContextManager[Sandbox]]


def successor(ctx: RunContext, instance: Instance, role: str) -> Successor:
    """Fresh ``role`` sandboxes of this run for ``instance`` from finished ones (no network)."""

    @contextlib.contextmanager
    def fresh(finished: Sandbox) -> Iterator[Sandbox]:
        backend = ctx.backend
        finished.stop(0)  # whatever still ran there ends with its PID namespace
        if not backend.commits:  # the files are packed by ``tar`` inside it: idle, restarted
            backend.start_container(finished.id)
        name = successor_image_name(ctx.settings.environment.image_prefix, secrets.token_hex(8))
        directory = ctx.settings.storage.data_dir / "files"
        try:
            kept = backend.keep(finished, name, directory, labels={LABEL_KIND: "snapshot"})
        finally:
            if not backend.commits:
                finished.stop(0)
        try:
            sandbox = ctx.start_sandbox(kept, instance, role, network=False)
            try:
                yield sandbox
            finally:
                sandbox.remove()
        finally:
            kept.discard()
            if backend.commits:
                backend.images.remove(name)

    return fresh
