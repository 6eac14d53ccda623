"""git with hooks and fsmonitor off, for every git command the tool runs in a container.

A repository in a container is the participant's (or was, before grading): its
``.git/config`` may name an fsmonitor command, ``.git/hooks`` may hold a ``post-checkout``
hook. Both would run as root inside our own set-up, extraction and grading steps. Every git
command of ours therefore runs with ``core.hooksPath=/dev/null`` and ``core.fsmonitor=false``
given on the command line, which outranks any configuration file. ``safe.directory=*``: the
working tree may belong to the unprivileged test user while git runs as root. git before 2.36
(Debian bullseye's 2.30, in the Python 3.9 base image) ignores ``safe.directory`` given on
the command line, so the shell scripts also write it to the container's system
configuration (``/etc/gitconfig``, root's): without it, the grading script's own ``git
checkout`` of the test files failed once the tests had run as the test user, and a second
run of the same script found its test file deleted.
"""

from __future__ import annotations

GIT_SAFE_CONFIG = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "safe.directory=*",
)
GIT = ("git", *GIT_SAFE_CONFIG)
# a shell function that makes every later ``git`` in a bash script the safe one
SHELL_GIT_FUNCTION = (
    "git() { command git -c core.hooksPath=/dev/null -c core.fsmonitor=false "
    "-c safe.directory='*' \"$@\"; }\n"
    "command git config --system --get-all safe.directory 2>/dev/null | grep -qxF '*' "
    "|| command git config --system --add safe.directory '*' 2>/dev/null || true"
)
