"""The repository's files at one commit, read from the host's bare mirror with ``git``
(``ls-tree``, ``cat-file``): nothing of the repository runs on the host."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from orchestrator.repos.git_commands import GitError, git

# a packaging file larger than this is not one (a vendored data file of the same name)
MAX_FILE_BYTES = 1_000_000


class RepoFiles:
    """The paths and text of a repository's files at ``commit``, and the commit's time."""

    def __init__(self, repo: Path, commit: str) -> None:
        self.repo, self.commit = repo, commit
        listed = git(["ls-tree", "-r", "-l", "--full-tree", commit], repo)
        self._sizes: dict[str, int] = {}
        for line in listed.splitlines():
            meta, _, path = line.partition("\t")
            parts = meta.split()
            if len(parts) == 4 and parts[1] == "blob":
                self._sizes[path] = int(parts[3]) if parts[3].isdigit() else 0
        self._paths = sorted(self._sizes)
        self._texts: dict[str, str | None] = {}  # several readers ask for setup.py
        stamp = git(["show", "-s", "--format=%ct", commit], repo).strip()
        self.commit_time = datetime.fromtimestamp(int(stamp), tz=UTC)

    @property
    def paths(self) -> list[str]:
        """Every file of the commit's tree, sorted."""
        return self._paths

    def exists(self, path: str) -> bool:
        return path in self._sizes

    def read(self, path: str) -> str | None:
        """The file's text (undecodable bytes replaced), or None when the commit lacks it
        or it is too large to be a packaging file. Each file is read from git once."""
        if path not in self._sizes or self._sizes[path] > MAX_FILE_BYTES:
            return None
        if path not in self._texts:
            try:
                self._texts[path] = git(["cat-file", "-p", f"{self.commit}:{path}"], self.repo)
            except (GitError, UnicodeDecodeError):
                self._texts[path] = None
        return self._texts[path]
