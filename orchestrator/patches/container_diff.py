"""The container's diff: what the participant changed in its repository, asked of git.

``container_diff`` takes the diff of the repository against the base commit without touching
the repository's index or working tree.
"""

from __future__ import annotations

import uuid

from orchestrator.errors import SandboxError
from orchestrator.sandbox import Sandbox
from sandbox_tools.contract import TESTBED


class ContainerDiffError(SandboxError):
    """git could not produce the container's diff (e.g. the base commit is unknown)."""


_DIFF_SCRIPT = r"""set -eu
base=$1 out=$2
cd -- "$3"
git=(git -c safe.directory='*' -c core.quotepath=true -c core.hooksPath=/dev/null \
     -c core.fsmonitor=false)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
index=$("${git[@]}" rev-parse --git-path index)
export GIT_INDEX_FILE=$tmp/index
# start from a copy of the real index, so that git can trust its stat data and need not hash
# every file again, and compare the base with the working tree; new files are diffed against
# /dev/null one by one. No object is written: writing one the pack already holds (a file
# touched but unchanged, an empty new file) "freshens" the pack (sets its time), which in a
# container copies the whole pack up into the writable layer (sympy: 139 MB)
if [ -f "$index" ]; then cp "$index" "$GIT_INDEX_FILE"; else "${git[@]}" read-tree "$base"; fi
"${git[@]}" diff --binary --no-renames --no-color --no-ext-diff "$base" -- >"$out"
while IFS= read -r -d '' new; do
  "${git[@]}" diff --no-index --binary --no-color --no-ext-diff -- /dev/null "$new" >>"$out" \
    || [ $? = 1 ]
done < <("${git[@]}" ls-files -z --others --exclude-standard)
"""


def container_diff(sandbox: Sandbox, base_commit: str, repo_dir: str = TESTBED) -> str:
    """The diff of ``repo_dir`` in the container against ``base_commit``: edited, deleted and
    new files (untracked ones too, ignored ones not), binary changes included.

    Uses a temporary index, so the repository's own index and working tree stay as they are:
    safe while the participant is still working. Bytes that are not UTF-8 are kept as
    surrogate escapes (``text.encode("utf-8", "surrogateescape")`` gives them back).
    """
    out = f"/tmp/swe-container-diff-{uuid.uuid4().hex}.patch"
    argv = ["bash", "-c", _DIFF_SCRIPT, "container-diff", base_commit, out, repo_dir]
    result = sandbox.exec(argv, timeout=300)
    try:
        if not result.ok:
            why = "timed out" if result.timed_out else result.output.strip()[-1000:]
            raise ContainerDiffError(
                f"cannot diff {repo_dir} against {base_commit[:12]} in {sandbox.name}: {why}"
            )
        data = sandbox.read_file(out)
    finally:
        sandbox.exec(["rm", "-f", out], timeout=30)
    return data.decode("utf-8", "surrogateescape")
