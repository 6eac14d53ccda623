"""Fresh sandboxes from a finished one: its files, none of its processes.

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
# a fresh sandbox from kept files, removed on leaving its context
Fresh = Callable[[], AbstractContextManager[Sandbox]]
# given a finished sandbox, a context in which any number of fresh ones from its files start
Replicas = Callable[[Sandbox], AbstractContextManager[Fresh]]


def replicas(ctx: RunContext, instance: Instance, role: str) -> Replicas:
    """Fresh ``role`` sandboxes of this run for ``instance`` from a finished one's files, as
    many as asked, one after another or at once (no network): its files are kept once."""

    @contextlib.contextmanager
    def kept_files(finished: Sandbox) -> Iterator[Fresh]:
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

        @contextlib.contextmanager
        def fresh() -> Iterator[Sandbox]:
            sandbox = ctx.start_sandbox(kept, instance, role, network=False)
            try:
                yield sandbox
            finally:
                sandbox.remove()

        try:
            yield fresh
        finally:
            kept.discard()
            if backend.commits:
                backend.images.remove(name)

    return kept_files


def successor(ctx: RunContext, instance: Instance, role: str) -> Successor:
    """A fresh ``role`` sandbox of this run for ``instance`` from a finished one (no network):
    one of its :func:`replicas`."""
    many = replicas(ctx, instance, role)

    @contextlib.contextmanager
    def fresh(finished: Sandbox) -> Iterator[Sandbox]:
        with many(finished) as start, start() as sandbox:
            yield sandbox

    return fresh
