"""Bytecode compiled with the images, that no participant can poison.

Python compiles what it imports; with no bytecode to read, every test run compiled the
project and its packages from source again (``import sympy``: 6.0 s instead of 3.3 s; uv
installs without compiling, so numpy, pandas, pytest had none either), because grading
removes every ``.pyc`` of the repository and runs with ``PYTHONDONTWRITEBYTECODE``: a
patch's bytecode must never be loaded instead of its source.

So the images carry checked hash-based pycs (PEP 552) compiled as root while they are built,
before any participant exists (:mod:`.bytecode_tool` does the work in the container):

- **environment image** (:func:`compile_environment`): site-packages (not its ``tests``
  directories) and the repository at the set-up commit (not its test modules: the tests a
  grading runs are in the files its test patch changes, and pytest compiles what it
  collects itself), then the manifest;
- **instance image** (:func:`refresh_instance`): only what the base commit's checkout or
  reinstall changed is compiled again, stale and orphaned pycs are removed, and the manifest
  lists the repository's bytecode with its SHA-256 (root's, outside the repository);
- **eval script** (:mod:`orchestrator.grading.bytecode_sweep`): after the patches, before
  the tests, every repository pyc that is not listed, not identical to the listed one, not
  in a real ``__pycache__`` or not fresh for the source beside it *now* is removed (so what
  remains is the image's compilation of the very source the tests import: a patched file, a
  test file the test patch changed, a forged or planted pyc are never read);
  ``PYTHONDONTWRITEBYTECODE`` stays, so nothing is written during the tests. Site-packages
  is outside the repository: neither a patch nor the unprivileged test user can write there,
  and the bytecode a reinstall writes is removed (:mod:`orchestrator.grading.reinstall`).

A hash-based pyc carries the hash of its source, not a time: touching a file, or the clock,
changes nothing. Images built without this keep working as before (no manifest: the sweep
removes all the repository's bytecode). Grading in the participant's container
(``grade_in_participant_container``) drops the manifest first: a participant that was root
there could have written it.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.atomic import append_text
from orchestrator.sandbox import Sandbox
from sandbox_tools.contract import ACTIVATE, SWE_DIR, TESTBED

TOOL_SOURCE = Path(__file__).with_name("bytecode_tool.py")
MANIFEST = f"{SWE_DIR}/bytecode/manifest.json"
_TOOL_PATH = f"{SWE_DIR}/bytecode/tool.py"


def tool_source() -> str:
    """The program the containers run (:mod:`.bytecode_tool`)."""
    return TOOL_SOURCE.read_text()


def _run(
    sandbox: Sandbox, commands: list[list[str]], log_path: Path, title: str, timeout: float
) -> bool:
    """Run the tool's ``commands`` with the environment's Python (isolated from PYTHON*
    variables; with ``site``, which alone makes a venv's Python see its site-packages
    before 3.11); the output goes to the set-up log. False when a command failed (the
    image is still correct: bytecode is only an optimisation)."""
    sandbox.write_file(_TOOL_PATH, tool_source(), mode=0o644)
    steps = " && ".join(
        " ".join(["python -I -W ignore", _TOOL_PATH, c[0], TESTBED, MANIFEST, *c[1:]])
        for c in commands
    )
    script = (
        f"source {ACTIVATE} >/dev/null 2>&1; cd /; {steps}; ok=$?; rm -f {_TOOL_PATH}; exit $ok"
    )
    result = sandbox.exec(["bash", "-c", script], timeout=timeout)
    append_text(
        log_path,
        f"\n===== {title} (exit {result.exit_code}, {result.duration:.1f}s)\n"
        + result.output[-4000:],
    )
    return result.ok


def compile_environment(sandbox: Sandbox, log_path: Path, timeout: float) -> bool:
    """Environment image: compile site-packages and the repository (not its test modules,
    whose pycs would never be read), write the manifest."""
    return _run(sandbox, [["compile"], ["manifest"]], log_path, "bytecode", timeout)


def refresh_instance(sandbox: Sandbox, log_path: Path, timeout: float) -> bool:
    """Instance image (after the base commit): list the environment's bytecode that is still
    fresh, removing what the base commit made stale; nothing is compiled again (the modules
    the base changed compile when imported, unwritten, as without bytecode: an instance
    layer of recompiled pycs cost 5.8 MB an instance, sympy's 11 MB). Nothing when
    the environment image has no manifest (built before this)."""
    found = sandbox.exec(["test", "-f", MANIFEST], timeout=30)
    if not found.ok:
        return False
    return _run(sandbox, [["manifest"]], log_path, "bytecode", timeout)


def drop_manifest_command() -> str:
    """The shell command that removes the manifest (the container is no longer the image's)."""
    return f"rm -f {MANIFEST}"
