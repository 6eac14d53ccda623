"""The markers around the test output: the eval script prints :data:`START_MARKER` before
the test command and :func:`format_end_line` after it; :func:`extract_between_markers` takes
the part between."""

from __future__ import annotations

import re
import shlex

START_MARKER = ">>>>> SWE_GREEN_START"
END_MARKER = ">>>>> SWE_GREEN_END"


# --------------------------------------------------------------------------- markers


def format_end_line(exit_code: int | str, nonce: str = "") -> str:
    """The line the eval script prints after the test command, e.g. ``... <nonce> exit=1``.

    Pass shell expansions such as ``"$rc"`` and ``"$nonce"`` to build the script's line.
    """
    return f"{END_MARKER} {nonce} exit={exit_code}" if nonce else f"{END_MARKER} exit={exit_code}"


def wrap_test_command(
    test_command: str, nonce: str = "$nonce", prefix: str = "", after: str = ""
) -> str:
    """Shell lines that run ``test_command`` in a subshell between the markers.

    The markers carry ``nonce`` (a shell expansion: the script's secret of this run, never
    given to the test process); the end line carries the command's exit code, also under
    ``set -e``. ``prefix`` is put before the quoted command (e.g. a function that runs it
    as another user); without one the command runs as written. ``after`` runs between the
    command and the end marker.
    """
    command = f"{prefix} {shlex.quote(test_command)}" if prefix else test_command
    return "\n".join(
        [
            f'echo "{START_MARKER} {nonce}"',
            "rc=0",
            f"( {command} ) || rc=$?",
            *([after] if after else []),
            f'echo "{format_end_line("$rc", nonce)}"',
        ]
    )


def extract_between_markers(
    text: str, start: str = START_MARKER, end: str = END_MARKER, nonce: str = ""
) -> tuple[str | None, int | None]:
    """The output between the start and end marker lines, and the exit code after the end one.

    With ``nonce`` only marker lines that carry it count: the code under test cannot predict
    it. The last end line counts (ours is the last thing the eval script prints) and the last
    start line before it: anything printed earlier, e.g. by a patched ``setup.py`` during a
    reinstall, stays outside the section. Returns ``(None, None)`` without an end line and
    ``(None, exit_code)`` without a start line before it; the exit code is ``None`` when the
    end line carries none.
    """
    tag = rf"[ \t]+{re.escape(nonce)}" if nonce else ""
    end_re = re.compile(rf"^{re.escape(end)}{tag}(?:[ \t]+exit=(-?\d+))?[ \t]*\r?$", re.MULTILINE)
    ends = list(end_re.finditer(text))
    if not ends:
        return None, None
    last_end = ends[-1]
    exit_code = int(last_end.group(1)) if last_end.group(1) is not None else None
    start_re = re.compile(rf"^{re.escape(start)}{tag}[ \t]*\r?$", re.MULTILINE)
    starts = [m for m in start_re.finditer(text, 0, last_end.start())]
    if not starts:
        return None, exit_code
    return text[starts[-1].end() : last_end.start()].strip("\r\n") + "\n", exit_code
