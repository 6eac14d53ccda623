"""Running git on the host (mirrors, exported checkouts and histories): no prompt, a one-line
error with git's own message, and retries of what a flaky network fails."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

from orchestrator.errors import UserError
from orchestrator.safe_git import GIT

GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",  # a missing https repository must fail, not ask for a password
    "GIT_ASKPASS": "true",
    "LC_ALL": "C",
}


TRANSIENT = re.compile(
    r"could not resolve host|connection (timed out|reset|refused)|early eof|rpc failed|"
    r"the remote end hung up|operation timed out|temporary failure",
    re.IGNORECASE,
)


class RepoError(UserError):
    """A repository or commit cannot be obtained."""


class GitError(RuntimeError):
    """A git command failed; the message holds the command and git's stderr."""

    def __init__(self, args: list[str], stderr: str) -> None:
        self.stderr = stderr.strip()
        super().__init__(f"git {' '.join(args)}: {one_line(self.stderr)}")


def has_commit(mirror: Path, commit: str) -> bool:
    done = subprocess.run(
        ["git", "cat-file", "-e", f"{commit}^{{commit}}"],
        cwd=mirror, env=os.environ | GIT_ENV, capture_output=True, check=False,
    )  # fmt: skip
    return done.returncode == 0


def git_retrying(args: list[str], cwd: Path | None = None) -> str:
    retrying = retry(
        retry=retry_if_exception(
            lambda e: isinstance(e, GitError) and bool(TRANSIENT.search(e.stderr))
        ),
        stop=stop_after_attempt(3),
        wait=wait_exponential(multiplier=2, max=20),
        reraise=True,
    )
    return retrying(git)(args, cwd)


def git(args: list[str], cwd: Path | None = None) -> str:
    done = subprocess.run(
        [*GIT, *args],
        cwd=cwd,
        env=os.environ | GIT_ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise GitError(args, done.stderr or done.stdout)
    return done.stdout


def one_line(text: str) -> str:
    return " ".join(text.split())[:400]
