"""A throw-away image registry on 127.0.0.1 (Debian's ``docker-registry``), which Docker
trusts over plain http without configuration; for tests and ``bench/registry.py``."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def local_registry(root: Path) -> Iterator[str]:
    """A registry storing under ``root`` while the block runs; yields ``127.0.0.1:<port>``.
    Raises FileNotFoundError without the ``docker-registry`` program."""
    exe = shutil.which("docker-registry")
    if exe is None:
        raise FileNotFoundError("docker-registry (Debian package docker-registry)")
    port = free_port()
    root.mkdir(parents=True, exist_ok=True)
    config = root / "config.yml"
    config.write_text(
        "version: 0.1\nlog:\n  level: warn\n"
        f"storage:\n  filesystem:\n    rootdirectory: {root / 'data'}\n"
        f"http:\n  addr: 127.0.0.1:{port}\n"
    )
    proc = subprocess.Popen(
        [exe, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError(f"docker-registry did not answer on 127.0.0.1:{port}")
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
