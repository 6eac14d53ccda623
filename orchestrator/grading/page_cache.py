"""Emptying the page cache of a container's files, so that a run hears nothing of earlier ones.

Containers of one image share the page cache of the image's files: code in one run can make
pages of a file nothing else reads resident (or evict them), and code in a later run, in
another container, can time its reads of those pages and so hear what the earlier run held.
Where twins are checked, before the participant's first command (its container just
started) and before the first run of each pair of the secret pair (:mod:`.twins.pair`),
every regular file of the container's root file system is read out of the cache
(``posix_fadvise`` ``DONTNEED``), as root and before any of the participant's code runs:
the originals an earlier grading of the same instance held in its official run, or what the
pair before held, reach neither the patch being written nor the run deciding blind.
"""

from __future__ import annotations

import shlex

from orchestrator.errors import SandboxError
from orchestrator.sandbox import Sandbox
from sandbox_tools.contract import ACTIVATE

# the tool run in the container (python -I -S: no site, no .pth, no environment); it walks
# the root file system without following links or entering other mounts, and prints the
# number of files it emptied
_TOOL = r"""
import os
def files(top):
    stack = [top]
    while stack:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not os.path.ismount(entry.path):
                        stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    yield entry.path
            except OSError:
                continue
count = 0
for path in files('/'):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        continue
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        count += 1
    except OSError:
        pass
    finally:
        os.close(fd)
print(count)
"""


def evict_page_cache(sandbox: Sandbox, timeout: float = 600) -> int:
    """Empty the page cache of every file of ``sandbox``'s root file system; the number of
    files. Raises :class:`~orchestrator.errors.SandboxError` when the tool cannot run: what
    must start blind does not start without it."""
    command = f"source {ACTIVATE} && cd / && exec python -I -S -c {shlex.quote(_TOOL)}"
    result = sandbox.exec(["bash", "-c", command], timeout=timeout)
    lines = result.stdout.split()
    if result.exit_code != 0 or not lines or not lines[-1].isdigit():
        tail = (result.stderr or result.stdout).strip()[-300:]
        raise SandboxError(f"could not empty the page cache of the container's files: {tail}")
    return int(lines[-1])
