"""The sandbox tools, run inside an instance container by its system Python.

Copied into the container at /opt/swe/tools.py and run as
``/usr/bin/python3 -I -S /opt/swe/tools.py --request '<json>'`` (or ``--request-file PATH``
for large requests; the file is deleted once read). A request is
``{"name", "arguments", "output_limit"?, "time_limit"?, "workdir"?}``; the answer is one JSON
object on stdout: ``{"output", "exit_code", "error", "truncated"}``.

This file must stay self-contained: standard library only, and no syntax newer than
Python 3.9 (the container's system Python may be that old; the repository's own environment
may be older still and is never used to run the tools). Its one companion is the container
contract (``sandbox_tools/contract.py``), copied beside it as ``contract.py``.

The host runs small ``bash`` calls without this file: it passes :data:`BASH_WRAPPER` straight
to ``bash -c`` (one ``docker exec``, no Python start-up); the ``bash`` tool here uses the same
wrapper, so both paths behave alike.

The other tools go through a small server, so that no Python interpreter starts per call:
``--serve PORT`` listens on 127.0.0.1:PORT inside the container (the loopback exists even
without a network), goes to the background once it listens, and forks one child per
connection (the modules are loaded once; a child that outlives its request's ``kill_after``
seconds ends by SIGALRM). The host's call is one ``docker exec`` of :data:`CLIENT`, a few lines
of bash that connect with ``/dev/tcp``, start the server first when none answers, send the
request line and copy the answer to stdout.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

try:  # on the host: the package's contract
    from sandbox_tools.contract import ACTIVATE, STATE_ROOT, TESTBED, TOOLS_PATH
except ImportError:  # in the container: the contract copied beside this program
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from contract import (  # type: ignore[no-redef]
        ACTIVATE,
        STATE_ROOT,
        TESTBED,
        TOOLS_PATH,
    )

WORKDIR = TESTBED
DEFAULT_OUTPUT_LIMIT = 30000
DEFAULT_TIMEOUT = 180
HISTORY_DEPTH = 50
BINARY_PROBE = 8192
SEARCH_MAX_FILE = 20 * 1024 * 1024
SEARCH_LINE_WIDTH = 300
SKIPPED_DIRS = {"__pycache__", "node_modules"}

# Runs one shell command with the instance's environment and the state of earlier calls.
# argv: $1 = the command, or "" and $2 = a file holding the command (deleted once read).
# State (exported variables, working directory) lives in STATE_ROOT/<hostname>/env.sh, so
# a container started from a snapshot of another container does not inherit its state.
# ACTIVATE is sourced first on every call; the saved state then wins, except when the
# activate script changed since the state was saved (then it is sourced again and wins).
BASH_WRAPPER = r"""exec 2>&1
__swe_A=@ACTIVATE@
__swe_S=@STATE_ROOT@/${HOSTNAME:-default}
[ -d "$__swe_S" ] || mkdir -p "$__swe_S"
__swe_readact() {
  __swe_act=
  if [ -f "$__swe_A" ]; then IFS= read -r -d '' __swe_act <"$__swe_A" || :; fi
}
__swe_readact; __swe_act0=$__swe_act
if [ -f "$__swe_A" ]; then . "$__swe_A"; fi
__swe_cwd=@TESTBED@
if [ -f "$__swe_S/env.sh" ]; then
  . "$__swe_S/env.sh"
  if [ -f "$__swe_A" ] && [ "${__swe_actsaved-}" != "$__swe_act0" ]; then . "$__swe_A"; fi
fi
if ! cd -- "$__swe_cwd" 2>/dev/null; then
  [ "$__swe_cwd" = @TESTBED@ ] ||
    printf 'note: the working directory %s no longer exists; now in @TESTBED@\n' "$__swe_cwd"
  cd @TESTBED@ 2>/dev/null || cd /
fi
__swe_save() {
  { set +euvx; } 2>/dev/null
  __swe_readact
  if [ "$__swe_act" != "$__swe_act0" ] && [ -f "$__swe_A" ]; then . "$__swe_A"; fi
  export -n PWD OLDPWD SHLVL _ 2>/dev/null
  { export -p; printf '__swe_cwd=%q\n__swe_actsaved=%q\n' "$PWD" "$__swe_act"; } >"$__swe_S/env.sh"
}
trap __swe_save EXIT
if [ -n "${2-}" ]; then
  IFS= read -r -d '' __swe_cmd <"$2" || :
  rm -f -- "$2"
else
  __swe_cmd=$1
fi
set --
eval "$__swe_cmd" </dev/null
"""
BASH_WRAPPER = (
    BASH_WRAPPER.replace("@ACTIVATE@", ACTIVATE)
    .replace("@STATE_ROOT@", STATE_ROOT)
    .replace("@TESTBED@", TESTBED)
)


# The host's per-call client: $1 = the server's port, $2 = the request (one JSON line).
# A server that is not running (a new container, one started from a snapshot, one whose
# processes were stopped) is started by the first call; two calls starting one at once are
# fine (the second bind fails, and that server exits). The request goes as one write
# ("PID JSON\n": bash's own pid, so that the answer can be written straight to its stdout);
# the server then sends "D" (done), or "S" and the answer when it could not write it there.
CLIENT = r"""__swe_connect() { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null
if ! __swe_connect "$1"; then
  /usr/bin/python3 -I -S @TOOLS_PATH@ --serve "$1" || exit
  __swe_connect "$1" || { echo "the tool server on port $1 does not answer" >&2; exit 70; }
fi
printf '%s' "$$ $2"$'\n' >&3
IFS= read -r -n 1 __swe_how <&3
[ "$__swe_how" = D ] || exec cat <&3
""".replace("@TOOLS_PATH@", TOOLS_PATH)


class ToolError(Exception):
    """The call was wrong or could not be done; the message tells the model why."""


# ----------------------------------------------------------------------------- helpers
def _result(output: str, exit_code: int = 0, error: bool = False, truncated: bool = False):
    return {"output": output, "exit_code": exit_code, "error": error, "truncated": truncated}


def _resolve(path: str, workdir: str) -> str:
    if not isinstance(path, str) or not path.strip():
        raise ToolError(f"path is empty; give a file or directory path, e.g. {TESTBED}/setup.py")
    return os.path.normpath(os.path.join(workdir, path))


def _is_binary(head: bytes) -> bool:
    return b"\x00" in head


def _read_text(path: str) -> str:
    """A text file's content; undecodable bytes survive a round trip (surrogateescape)."""
    if os.path.isdir(path):
        raise ToolError(f"{path} is a directory, not a file")
    if not os.path.exists(path):
        raise ToolError(f"{path} does not exist")
    with open(path, "rb") as handle:
        data = handle.read()
    if _is_binary(data[:BINARY_PROBE]):
        raise ToolError(
            f"{path} is a binary file ({len(data)} bytes); only text files can be edited"
        )
    return data.decode("utf-8", "surrogateescape")


def _encode(text: str) -> bytes:
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise ToolError(f"the text cannot be written as UTF-8: {exc.reason}") from None


def _write_bytes(path: str, data: bytes) -> None:
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    # written in place, so that the file keeps its mode and owner
    with open(path, "wb") as handle:
        handle.write(data)


def _numbered(lines, first: int) -> str:
    return "\n".join(f"{first + i:6d}\t{line}" for i, line in enumerate(lines))


def _snippet(text: str, line: int, count: int, context: int = 4) -> str:
    """Lines ``line``..``line+count-1`` (1-based) of ``text`` with ``context`` lines around."""
    lines = text.splitlines()
    start = max(1, line - context)
    end = min(len(lines), line + max(count, 1) - 1 + context)
    return _numbered([s.rstrip("\r") for s in lines[start - 1 : end]], start)


def _cap(text: str, limit: int, hint: str):
    """``text`` cut to ``limit`` characters at a line boundary, with a marker saying so."""
    if len(text) <= limit:
        return text, False
    cut = text.rfind("\n", 0, limit)
    cut = cut if cut > 0 else limit
    shown = text[:cut]
    rest = text[cut:].lstrip("\n")
    lines = rest.count("\n") + 1
    marker = f"\n[... output cut: {len(rest)} more characters ({lines} lines) not shown; "
    marker += f"{hint} ...]"
    return shown + marker, True


def cap_middle(text: str, limit: int):
    """``text`` cut to about ``limit`` characters, keeping its start and its end (where errors
    and summaries are) with a marker in between saying how much was left out."""
    if len(text) <= limit:
        return text, False
    head = limit * 2 // 5
    tail = limit - head
    left_out = text[head : len(text) - tail]
    marker = (
        f"\n[... output cut: {len(left_out)} characters ({left_out.count(chr(10))} lines) "
        "not shown here; redirect the output to a file and read parts of it ...]\n"
    )
    return text[:head] + marker + text[len(text) - tail :], True


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


# ----------------------------------------------------------------------------- bash
def tool_bash(args, ctx):
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ToolError("bash needs a non-empty command")
    timeout = float(args.get("timeout") or DEFAULT_TIMEOUT)
    argv = ["bash", "-c", BASH_WRAPPER, "swe-bash", command]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, _ = proc.communicate()
        text, truncated = cap_middle(out.decode("utf-8", "replace"), ctx["output_limit"])
        return _result(
            f"The command was killed after {timeout:g} s (its time limit). Output before that:\n"
            + text,
            exit_code=124,
            error=True,
            truncated=truncated,
        )
    text, truncated = cap_middle(out.decode("utf-8", "replace"), ctx["output_limit"])
    return _result(text, exit_code=proc.returncode, truncated=truncated)


def _kill_group(proc) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except OSError:
            return
        try:
            proc.wait(timeout=2)
            return
        except subprocess.TimeoutExpired:
            continue


# ----------------------------------------------------------------------------- view
def tool_view(args, ctx):
    path = _resolve(args.get("path", ""), ctx["workdir"])
    view_range = args.get("view_range")
    if not os.path.exists(path):
        raise ToolError(f"{path} does not exist")
    if os.path.isdir(path):
        if view_range is not None:
            raise ToolError(f"{path} is a directory; view_range applies to files only")
        return _list_dir(path, ctx["output_limit"])
    if not os.path.isfile(path):
        raise ToolError(f"{path} is not a regular file")
    start, end = _view_range(view_range)
    with open(path, "rb") as handle:
        head = handle.read(BINARY_PROBE)
        if _is_binary(head):
            size = os.fstat(handle.fileno()).st_size
            raise ToolError(
                f"{path} is a binary file ({size} bytes); view shows text files only "
                "(use bash with `xxd | head` or `file` to inspect it)"
            )
        handle.seek(0)
        shown, total, cut_at = _numbered_lines(handle, start, end, ctx["output_limit"])
    if total == 0:
        return _result(f"{path} is empty")
    if start > total:
        raise ToolError(f"view_range starts at line {start} but {path} has only {total} lines")
    text = "\n".join(shown)
    last = total if end == -1 else min(end, total)
    if cut_at is not None:
        text += (
            f"\n[... output cut: lines {cut_at}-{last} not shown (the file has {total} lines); "
            "pass view_range to see them ...]"
        )
    elif end > total:
        text += f"\n[end of file: {path} has {total} lines]"
    return _result(text, truncated=cut_at is not None)


def _view_range(view_range):
    """``(start, end)`` of the lines to show (end -1: to the end of the file)."""
    if view_range is None:
        return 1, -1
    if (
        not isinstance(view_range, list)
        or len(view_range) != 2
        or not all(isinstance(n, int) and not isinstance(n, bool) for n in view_range)
    ):
        raise ToolError("view_range must be two integers [start, end], e.g. [1, 50]")
    start, end = view_range
    if start < 1 or (end != -1 and end < start):
        raise ToolError(
            f"view_range [{start}, {end}] is invalid: lines start at 1, end must be >= start "
            "or -1 for the end of the file"
        )
    return start, end


def _numbered_lines(handle, start: int, end: int, limit: int):
    """The file's lines ``start``..``end`` numbered, within ``limit`` characters (a long line
    cut to half of it), the file's line count, and the first line left out (None: none)."""
    shown: list[str] = []
    total, used, cut_at = 0, 0, None
    for total, raw in enumerate(handle, 1):
        if total < start or (end != -1 and total > end) or cut_at is not None:
            continue
        line = raw.decode("utf-8", "replace").rstrip("\n").rstrip("\r")
        if len(line) > limit // 2:
            line = line[: limit // 2] + f" [... line cut: {len(line)} characters in all]"
        entry = f"{total:6d}\t{line}"
        if used + len(entry) + 1 > limit and shown:
            cut_at = total
            continue
        shown.append(entry)
        used += len(entry) + 1
    return shown, total, cut_at


def _list_dir(root: str, limit: int):
    lines = [root.rstrip("/") + "/"]
    problems = []

    def entries(directory: str):
        try:
            found = [e for e in os.scandir(directory) if not e.name.startswith(".")]
        except OSError as exc:
            problems.append(f"{directory}: {exc.strerror}")
            return []
        return sorted(found, key=lambda e: e.name)

    for entry in entries(root):
        is_dir = entry.is_dir(follow_symlinks=False)
        lines.append(entry.path + ("/" if is_dir else ""))
        if is_dir:
            for sub in entries(entry.path):
                lines.append(sub.path + ("/" if sub.is_dir(follow_symlinks=False) else ""))
    lines.extend(f"(cannot read {p})" for p in problems)
    text = f"Files and directories up to 2 levels deep in {root}, hidden ones left out:\n"
    text += "\n".join(lines)
    text, truncated = _cap(text, limit, "view a subdirectory to see more")
    return _result(text, truncated=truncated)


# ----------------------------------------------------------------------------- edit
def _history_dir(path: str) -> str:
    key = hashlib.sha1(os.path.realpath(path).encode("utf-8", "surrogateescape")).hexdigest()
    return os.path.join(STATE_ROOT, socket.gethostname() or "default", "edits", key[:20])


def _history(path: str):
    directory = _history_dir(path)
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return directory, []
    numbered = sorted({int(n.split(".")[0]) for n in names if n.split(".")[0].isdigit()})
    return directory, numbered


def _remember(path: str) -> None:
    """Keep the file's current content (or its absence) so that undo can bring it back."""
    directory, numbered = _history(path)
    os.makedirs(directory, exist_ok=True)
    number = (numbered[-1] + 1) if numbered else 1
    entry = os.path.join(directory, f"{number:08d}")
    if os.path.isfile(path):
        shutil.copyfile(path, entry)
    else:
        open(entry + ".absent", "wb").close()
    if not numbered:  # the same path always maps to this directory: written once
        with open(os.path.join(directory, "path"), "w", encoding="utf-8", errors="replace") as f:
            f.write(path)
    for old in numbered[: max(0, len(numbered) + 1 - HISTORY_DEPTH)]:
        for suffix in ("", ".absent"):
            try:
                os.remove(os.path.join(directory, f"{old:08d}{suffix}"))
            except FileNotFoundError:
                pass


def tool_edit(args, ctx):
    command = args.get("command")
    path = _resolve(args.get("path", ""), ctx["workdir"])
    handlers = {"create": _create, "str_replace": _str_replace, "insert": _insert, "undo": _undo}
    if command not in handlers:
        choices = ", ".join(sorted(handlers))
        raise ToolError(f"unknown edit command {command!r}; use one of: {choices}")
    return handlers[command](path, args)


def _create(path: str, args):
    text = args.get("file_text")
    if not isinstance(text, str):
        raise ToolError("edit create needs file_text (the whole content of the new file)")
    if os.path.isdir(path):
        raise ToolError(f"{path} is a directory")
    existed = os.path.exists(path)
    data = _encode(text)
    _remember(path)
    _write_bytes(path, data)
    verb = "Overwrote" if existed else "Created"
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    return _result(f"{verb} {path} ({lines} lines, {len(data)} bytes)")


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _str_replace(path: str, args):
    old, new = args.get("old_str"), args.get("new_str", "")
    if not isinstance(old, str) or old == "":
        raise ToolError("edit str_replace needs old_str: the exact text to replace (non-empty)")
    if not isinstance(new, str):
        raise ToolError('new_str must be a string (use "" to delete old_str)')
    text = _read_text(path)
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
        crlf_old = old.replace("\n", "\r\n")
        if text.count(crlf_old):
            old, new = crlf_old, new.replace("\r\n", "\n").replace("\n", "\r\n")
            count = text.count(old)
    if count == 0:
        hint = "view the file and copy the lines exactly, including indentation and blank lines"
        stripped = old.strip()
        if stripped and stripped != old and stripped in text:
            hint = (
                "old_str matches only without its leading/trailing whitespace or newlines; "
                "check them"
            )
        raise ToolError(f"old_str was not found in {path} (0 matches); {hint}")
    if count > 1:
        positions: list[str] = []
        start = 0
        while len(positions) < 20:
            index = text.find(old, start)
            if index < 0:
                break
            positions.append(str(_line_of(text, index)))
            start = index + 1
        raise ToolError(
            f"old_str occurs {count} times in {path} (starting at lines {', '.join(positions)}); "
            "nothing was changed. Include more surrounding lines in old_str so that it matches "
            "exactly once"
        )
    index = text.index(old)
    updated = text[:index] + new + text[index + len(old) :]
    _remember(path)
    _write_bytes(path, _encode(updated))
    line = _line_of(updated, index)
    snippet = _snippet(updated, line, new.count("\n") + 1)
    return _result(
        f"Edited {path}: replaced 1 occurrence at line {line}. "
        f"The lines around it now read:\n{snippet}"
    )


def _insert(path: str, args):
    line = args.get("insert_line")
    new = args.get("insert_text")
    if new is None:
        new = args.get("new_str")
    if not isinstance(line, int) or isinstance(line, bool):
        raise ToolError("edit insert needs insert_line: the line number to insert after (0 = top)")
    if not isinstance(new, str):
        raise ToolError("edit insert needs insert_text: the text to insert")
    text = _read_text(path)
    lines = text.splitlines(True)
    if line < 0 or line > len(lines):
        raise ToolError(
            f"insert_line {line} is out of range: {path} has {len(lines)} lines "
            f"(use 0 to {len(lines)})"
        )
    newline = "\r\n" if "\r\n" in text else "\n"
    if new and not new.endswith("\n"):
        new += newline
    if line == len(lines) and lines and not lines[-1].endswith("\n"):
        lines[-1] += newline
    updated = "".join(lines[:line]) + new + "".join(lines[line:])
    _remember(path)
    _write_bytes(path, _encode(updated))
    added = new.count("\n")
    snippet = _snippet(updated, line + 1, added)
    return _result(
        f"Inserted {_plural(added, 'line')} after line {line} of {path}. "
        f"The lines around it now read:\n{snippet}"
    )


def _undo(path: str, args):
    directory, numbered = _history(path)
    if not numbered:
        raise ToolError(f"there is no edit of {path} to undo")
    entry = os.path.join(directory, f"{numbered[-1]:08d}")
    if os.path.exists(entry + ".absent"):
        if os.path.isfile(path):
            os.remove(path)
        os.remove(entry + ".absent")
        message = f"Undid the last edit of {path}: the edit had created it, so it is removed"
    else:
        with open(entry, "rb") as handle:
            data = handle.read()
        _write_bytes(path, data)
        os.remove(entry)
        message = (
            f"Undid the last edit of {path}; it is back to its previous content ({len(data)} bytes)"
        )
    left = len(numbered) - 1
    return _result(message + (f"; {left} earlier edits can still be undone" if left else ""))


# ----------------------------------------------------------------------------- search
def _search_regex(args):
    """The search's pattern, compiled (with ``case_insensitive``)."""
    pattern = args.get("pattern")
    if not isinstance(pattern, str) or pattern == "":
        raise ToolError("search needs a non-empty pattern (a Python regular expression)")
    flags = re.IGNORECASE if args.get("case_insensitive") else 0
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None


def tool_search(args, ctx):
    regex = _search_regex(args)
    pattern = regex.pattern
    root = _resolve(args.get("path") or ctx["workdir"], ctx["workdir"])
    if not os.path.exists(root):
        raise ToolError(f"{root} does not exist")
    glob = args.get("glob") or None
    max_results = int(args.get("max_results") or 100)
    deadline = time.monotonic() + float(ctx["time_limit"])

    hits, total, files_with_hits, skipped = [], 0, 0, []
    stopped = False
    for path in _walk(root):
        if glob is not None and not _glob_match(glob, path, root):
            continue
        if time.monotonic() > deadline:
            stopped = True
            break
        try:
            if os.path.getsize(path) > SEARCH_MAX_FILE:
                skipped.append(path)
                continue
            found = _search_file(path, regex, hits, max_results)
        except OSError:
            continue
        total += found
        files_with_hits += found > 0

    notes = []
    if total > len(hits):
        notes.append(
            f"[... {total - len(hits)} more matches not shown ({total} in total in "
            f"{_plural(files_with_hits, 'file')}); narrow the pattern, path or glob, or raise "
            "max_results ...]"
        )
    if skipped:
        notes.append(f"[{len(skipped)} files over {SEARCH_MAX_FILE >> 20} MB were not searched]")
    if stopped:
        notes.append(f"[search stopped after {ctx['time_limit']:g} s: results are partial]")
    if not hits:
        text = f"No matches for /{pattern}/ under {root}" + (f" (glob {glob})" if glob else "")
        return _result("\n".join([text] + notes), exit_code=1)
    text, truncated = _cap("\n".join(hits), ctx["output_limit"], "narrow the search")
    summary = (
        f"{total} {'match' if total == 1 else 'matches'} in {_plural(files_with_hits, 'file')}"
    )
    return _result(
        "\n".join([text] + notes + ([summary] if not notes else [])),
        truncated=truncated or total > len(hits),
    )


def _search_file(path: str, regex, hits: list, max_results: int) -> int:
    """How many lines of the text file ``path`` match; those within ``max_results`` are added
    to ``hits`` (``path:line: text``, long lines cut). A binary file has none."""
    found = 0
    with open(path, "rb") as handle:
        if _is_binary(handle.read(BINARY_PROBE)):
            return 0
        handle.seek(0)
        for number, raw in enumerate(handle, 1):
            line = raw.decode("utf-8", "replace").rstrip("\n").rstrip("\r")
            if regex.search(line):
                found += 1
                if len(hits) < max_results:
                    if len(line) > SEARCH_LINE_WIDTH:
                        line = line[:SEARCH_LINE_WIDTH] + " [... line cut]"
                    hits.append(f"{path}:{number}: {line}")
    return found


def _walk(root: str):
    if os.path.isfile(root):
        yield root
        return
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
        for name in sorted(files):
            path = os.path.join(directory, name)
            if os.path.isfile(path):
                yield path


def _glob_match(glob: str, path: str, root: str) -> bool:
    if "/" not in glob:
        return fnmatch.fnmatchcase(os.path.basename(path), glob)
    relative = os.path.relpath(path, root) if os.path.isdir(root) else os.path.basename(path)
    return fnmatch.fnmatchcase(relative, glob) or fnmatch.fnmatchcase(path, glob)


# ----------------------------------------------------------------------------- entry point
TOOLS = {"bash": tool_bash, "view": tool_view, "edit": tool_edit, "search": tool_search}


def run(request) -> dict:
    """Run one request and return the result object (never raises)."""
    if not isinstance(request, dict):
        return _result("the request must be a JSON object", 2, True)
    name = request.get("name")
    args = request.get("arguments")
    if args is None:
        args = {}
    if name not in TOOLS:
        return _result(f"unknown tool {name!r}; the tools are: {', '.join(sorted(TOOLS))}", 2, True)
    if not isinstance(args, dict):
        return _result("arguments must be a JSON object", 2, True)
    ctx = {
        "output_limit": int(request.get("output_limit") or DEFAULT_OUTPUT_LIMIT),
        "time_limit": float(request.get("time_limit") or DEFAULT_TIMEOUT),
        "workdir": request.get("workdir") or WORKDIR,
    }
    try:
        return TOOLS[name](args, ctx)
    except ToolError as exc:
        return _result(str(exc), 1, True)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        return _result(f"{name} failed: {exc.strerror or exc}{where}", 1, True)


def _read_request_file(path: str):
    try:
        with open(path, "rb") as handle:
            return json.loads(handle.read().decode("utf-8"))
    finally:
        try:
            os.remove(path)
        except OSError:
            pass


def _load_request(argv):
    if len(argv) == 2 and argv[0] == "--request":
        return json.loads(argv[1])
    if len(argv) == 2 and argv[0] == "--request-file":
        return _read_request_file(argv[1])
    raise ValueError("usage: tools.py --request JSON | --request-file PATH | --serve PORT")


def answer(line: bytes) -> dict:
    """The result of one request line: a request object, or ``{"request_file": PATH, ...}``
    for a request too large for an argv element (the file is deleted once read)."""
    try:
        request = json.loads(line.decode("utf-8"))
        if isinstance(request, dict) and "request_file" in request:
            request = _read_request_file(str(request["request_file"]))
    except (ValueError, OSError) as exc:
        return _result(f"bad tool request: {exc}", 2, True)
    return run(request)


# ----------------------------------------------------------------------------- server
def _read_line(conn) -> bytes:
    chunks = []
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    return b"".join(chunks)


def _handle(conn) -> None:
    """In the worker for one connection: read the request line, answer, end."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the bash tool waits for its children
    signal.setitimer(signal.ITIMER_REAL, DEFAULT_TIMEOUT)  # a client that sends nothing
    pid, _, line = _read_line(conn).partition(b" ")
    try:
        kill_after = float(json.loads(line.decode("utf-8")).get("kill_after") or 0)
    except (ValueError, AttributeError):
        kill_after = 0.0
    signal.setitimer(signal.ITIMER_REAL, kill_after if kill_after > 0 else DEFAULT_TIMEOUT)
    data = json.dumps(answer(line)).encode("utf-8")
    if _write_to_stdout_of(pid, data):
        conn.sendall(b"D")
    else:
        conn.sendall(b"S" + data)
    conn.shutdown(socket.SHUT_WR)  # the client sees the end now, not once this process is gone


def _write_to_stdout_of(pid: bytes, data: bytes) -> bool:
    """Write ``data`` to the stdout of process ``pid`` (the client: saves it a ``cat``);
    False when that cannot be opened (nothing was written then)."""
    try:
        fd = os.open(f"/proc/{int(pid)}/fd/1", os.O_WRONLY | os.O_APPEND)
    except (ValueError, OSError):
        return False
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        pass  # the client is gone: nobody reads the answer
    finally:
        os.close(fd)
    return True


def _listen(port: int):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(64)
    return server


def _worker(server, ready: int) -> None:
    """A forked worker: accept one connection, tell the server (a byte on ``ready``), serve
    it and end. Forked ahead of its call, so no fork is on a call's path."""
    status = 1
    try:
        while True:
            try:
                conn, _ = server.accept()
                break
            except InterruptedError:
                continue
        os.write(ready, b"x")
        os.close(ready)
        server.close()
        _handle(conn)
        status = 0
    finally:
        os._exit(status)


def serve(port: int) -> int:
    """Listen on 127.0.0.1:``port``, then serve in the background; 0 when a server (this one
    or one started a moment before) listens there.

    The server keeps one idle worker waiting in ``accept``; when it takes a connection, the
    next is forked. A worker ends with its call (a call's state never leaks into the next)."""
    try:
        server = _listen(port)
    except OSError as exc:
        if exc.errno == 98:  # EADDRINUSE: another call started it first
            return 0
        sys.stderr.write(f"the tool server cannot listen on port {port}: {exc}\n")
        return 70
    sys.stdout.flush()
    if os.fork():
        return 0  # the caller connects once this exits: the server already listens
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    os.chdir("/")
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped by the kernel
    while True:
        ready, ready_w = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # no process left (the pids limit): try again a little later
            os.close(ready)
            os.close(ready_w)
            time.sleep(0.2)
            continue
        if pid == 0:
            os.close(ready)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _worker(server, ready_w)
        os.close(ready_w)
        took = os.read(ready, 1)  # b"" when the worker ended without a connection
        os.close(ready)
        if not took:
            time.sleep(0.05)


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] == "--serve":
        return serve(int(args[1]))
    try:
        request = _load_request(args)
    except (ValueError, OSError) as exc:
        result = _result(f"bad tool request: {exc}", 2, True)
    else:
        result = run(request)
    sys.stdout.write(json.dumps(result))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
