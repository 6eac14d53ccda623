"""The eval script's bytecode step: before the tests, only the image's own bytecode of
the repository stays, verified against the image's manifest and fresh for the source beside
it; when the check cannot run, all of it goes (see :mod:`orchestrator.plan.bytecode`).
"""

from __future__ import annotations

import shlex

from orchestrator.plan.bytecode import MANIFEST, tool_source

_HEREDOC = "SWE_GREEN_BYTECODE_TOOL"


def sweep_lines(repo_dir: str) -> list[str]:
    """The eval script's step (as root, after the patches, before the tests): keep only the
    image's verified, fresh bytecode of the repository; if the check cannot run, remove all."""
    remove_all = (
        f"find {repo_dir} -path {repo_dir}/.git -prune -o \\( -name __pycache__ -type d \\)"
        " -prune -exec rm -rf {} + -o \\( -name '*.pyc' -o -name '*.pyo' \\) ! -type d"
        " -exec rm -f {} +"
    )
    return [
        "# bytecode: only the image's own, verified and fresh for the source beside it",
        f"if ! (cd / && python -I -S - sweep {shlex.quote(repo_dir)} {MANIFEST}) <<'{_HEREDOC}'",
        tool_source().rstrip(),
        _HEREDOC,
        "then",
        f"    {remove_all}",
        "fi",
    ]
