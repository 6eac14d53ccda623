"""What the patch's code does at test time, observed: the audit hook's set-up and its report.

Before the tests, grading puts the hook (:mod:`.audit_hook`), its configuration and a ``.pth``
line that runs it into :data:`AUDIT_DIR` (root's, read-only to the tests); the eval script
copies the ``.pth`` into the environment's site-packages, opens the FIFO the hook reports to
(world-writable, read by a root ``cat`` into :data:`AUDIT_LOG`, which only root reads) and
marks the test command's first Python process. The configuration names the patch's lines
(:func:`patch_lines`: every added or changed line after the patch was applied, every line of
a file the patch adds), the hidden test files and the words that name the test runner.

:func:`read_audit` turns the records into evidence: each event the hook attributed to a
patch line, and a test command that exited 0 while its first Python process never reached
the interpreter's exit (it was replaced, or left with ``os._exit`` after printing). Evidence
is not a flag: grading counts every test as failing (``tamper_detected``). The functions
that take a sandbox put the files in and read the records out; the rest are pure.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, Field

from orchestrator.atomic import atomic_write_text
from orchestrator.diffs.diff import Patch, as_patch
from orchestrator.models import Instance
from orchestrator.recipes.recipe import Recipe, touched_test_files
from orchestrator.safe_git import SHELL_GIT_FUNCTION
from orchestrator.sandbox import Sandbox, SandboxError
from orchestrator.sandbox.archives import files_archive
from sandbox_tools.contract import AUDIT_CONFIG, AUDIT_DIR, EVAL_DIR, TESTBED

HOOK_PATH = f"{AUDIT_DIR}/hook.py"
CONFIG_PATH = AUDIT_CONFIG
FIFO_PATH = f"{AUDIT_DIR}/events.fifo"
PTH_PATH = f"{AUDIT_DIR}/swe-green-audit.pth"
AUDIT_LOG = f"{AUDIT_DIR}/events.log"
# first in site-packages' sorted order: before any other .pth (an editable finder) runs
PTH_NAME = "00-swe-green-audit.pth"
TOP_VARIABLE = "SWE_GREEN_AUDIT_TOP"
HOOK_SOURCE = Path(__file__).with_name("audit_hook.py")
PTH_LINE = (
    f"import builtins, os; os.path.isfile({HOOK_PATH!r}) and exec(compile(open({HOOK_PATH!r})"
    f".read(), {HOOK_PATH!r}, 'exec'), {{'__name__': '__swe_green_audit__', "
    f"'CONFIG': {CONFIG_PATH!r}, '__builtins__': dict(vars(builtins))}})\n"
)


class AuditConfig(BaseModel):
    """What the hook watches: the patch's lines by repository path (``None``: every line of
    a file the patch adds), the hidden test files, and words that name the test runner."""

    repo: str = TESTBED
    lines: dict[str, list[int] | None] = Field(default_factory=dict)
    tests: list[str] = Field(default_factory=list)
    runner_words: list[str] = Field(default_factory=list)
    eval_dir: str = EVAL_DIR
    fifo: str = FIFO_PATH


class AuditReport(BaseModel):
    """What the hook reported of one test run."""

    active: bool = False  # a Python process of the run installed the hook
    evidence: list[str] = Field(default_factory=list)  # ``path:line what``, or the exit rule


def audit_files(config: AuditConfig) -> dict[str, tuple[bytes | str, int]]:
    """The files of :data:`AUDIT_DIR`, relative to its parent, for one archive copy."""
    name = posixpath.basename(AUDIT_DIR)
    return {
        f"{name}/{posixpath.basename(HOOK_PATH)}": (HOOK_SOURCE.read_text(), 0o644),
        f"{name}/{posixpath.basename(CONFIG_PATH)}": (config.model_dump_json(), 0o644),
        f"{name}/{posixpath.basename(PTH_PATH)}": (PTH_LINE, 0o644),
    }


def start_lines() -> list[str]:
    """Eval-script lines, as root before the tests: the ``.pth`` in the environment's
    site-packages, the FIFO and its reader, the first-process mark. Nothing without the
    configuration (a run grading did not set up to audit)."""
    site = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return [
        "audit_reader=; audit_pth=",
        f"if [ -f {CONFIG_PATH} ]; then",
        f'    audit_pth="$(python -c {shlex.quote(site)} 2>/dev/null)/{PTH_NAME}"',
        f'    cp {PTH_PATH} "$audit_pth" && chmod 644 "$audit_pth" || audit_pth=',
        f"    rm -f {FIFO_PATH} {AUDIT_LOG} && mkfifo -m 622 {FIFO_PATH}",
        # the script holds the FIFO open (read-write: never blocks) so that the reader sees
        # its end only after the tests; the tests never get that descriptor (as_test_user)
        f"    exec 7<>{FIFO_PATH}",
        f"    (umask 077 && exec cat {FIFO_PATH} > {AUDIT_LOG} 7>&-) & audit_reader=$!",
        f"    export {TOP_VARIABLE}=1",
        "fi",
    ]


def stop_lines() -> list[str]:
    """Eval-script lines after the tests: the FIFO closed and read to its end, the ``.pth``
    removed again."""
    return [
        'if [ -n "$audit_reader" ]; then',
        f"    unset {TOP_VARIABLE}; exec 7>&-",
        "    for _ in $(seq 250); do",
        '        kill -0 "$audit_reader" 2>/dev/null || break; sleep 0.02',
        "    done",
        '    kill "$audit_reader" 2>/dev/null; wait "$audit_reader" 2>/dev/null',
        "fi",
        '[ -z "$audit_pth" ] || rm -f "$audit_pth"',
    ]


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def patch_lines(diff_u0: str, patch: Patch | str) -> dict[str, list[int] | None]:
    """The patch's lines by path: from ``git diff -U0`` of the applied tree against the base
    (the added and changed lines, where they landed), and every line (``None``) of each
    file ``patch`` adds, whatever its extension."""
    found: dict[str, list[int] | None] = {}
    current: str | None = None
    for line in diff_u0.splitlines():
        if line.startswith("+++ "):
            name = line[4:].strip()
            current = name[2:] if name.startswith("b/") else None
            if current is not None:
                found.setdefault(current, [])
        elif current is not None and (match := _HUNK.match(line)):
            start, count = int(match[1]), int(match[2] or 1)
            numbers = found[current]
            assert numbers is not None
            numbers.extend(range(start, start + count))
    for part in as_patch(patch).files:
        if part.old is None and part.new:
            found[part.new] = None
    return {path: lines for path, lines in found.items() if lines is None or lines}


def runner_words(test_cmd: str, tests: Iterable[str]) -> list[str]:
    """Words whose presence in a command line means it runs the tests: the test command's
    program, the runners' names, the hidden test files."""
    words = ["pytest", "py.test", "unittest", "--collect-only", "runtests", "bin/test"]
    for token in shlex.split(test_cmd):
        if "=" not in token:
            program = posixpath.basename(token) if "/" not in token.lstrip("./") else token
            words.append(program.lstrip("./"))
            break
    words += [posixpath.basename(path) for path in tests]
    return list(dict.fromkeys(w for w in words if w))


def read_audit(log: str, exit_code: int | None) -> AuditReport:
    """The evidence in the hook's records (see the module doc)."""
    evidence: list[str] = []
    tops: dict[str, str] = {}  # pid -> secret of the test command's first process
    ended: set[tuple[str, str]] = set()
    active = False
    for line in log.splitlines():
        fields = line.split("\t")
        if fields[0] == "S" and len(fields) == 4:
            active = True
            if fields[2] == "1":
                tops[fields[1]] = fields[3]
        elif fields[0] == "X" and len(fields) == 3:
            ended.add((fields[1], fields[2]))
        elif fields[0] == "E" and len(fields) == 5:
            item = f"{fields[3]} {fields[4]}"
            if item not in evidence:
                evidence.append(item)
    if exit_code == 0:
        for pid, secret in tops.items():
            if (pid, secret) not in ended:
                evidence.append(
                    "the test process never reached the interpreter's exit, yet the test "
                    "command exited 0 (replaced by exec, or left with os._exit)"
                )
                break
    return AuditReport(active=active, evidence=evidence)


# --------------------------------------------------------------------------- in the sandbox
def audit_config(
    sandbox: Sandbox, instance: Instance, recipe: Recipe, patch: Patch | str, repo_dir: str,
    eval_dir: str,
) -> AuditConfig:  # fmt: skip
    """What the hook watches for ``patch``, applied in ``sandbox``'s repository at
    ``repo_dir``: where its lines landed (``git diff -U0`` against the base commit)."""
    diff = sandbox.exec(
        ["bash", "-c", f"{SHELL_GIT_FUNCTION}\ncd {shlex.quote(repo_dir)} && git diff -U0 "
         f"--no-color --no-ext-diff --no-renames {shlex.quote(instance.base_commit)} --"],
        timeout=120,
    )  # fmt: skip
    tests = touched_test_files(instance.test_patch)
    return AuditConfig(
        repo=repo_dir,
        lines=patch_lines(diff.stdout, patch),
        tests=tests,
        runner_words=runner_words(recipe.test_cmd, tests),
        eval_dir=eval_dir,
    )


def put_audit_files(sandbox: Sandbox, config: AuditConfig) -> None:
    """The hook, its configuration and its ``.pth`` line into :data:`AUDIT_DIR`, root's."""
    sandbox.put_archive(posixpath.dirname(AUDIT_DIR), files_archive(audit_files(config)))


def audit_report(sandbox: Sandbox, exit_code: int | None, log_dir: Path | None) -> AuditReport:
    """What the hook reported (:func:`read_audit`; its records are written to ``audit.log``
    in ``log_dir``); nothing when it wrote nothing."""
    try:
        text = sandbox.read_file(AUDIT_LOG, max_bytes=16 * 1024 * 1024).decode("utf-8", "replace")
    except SandboxError:
        return AuditReport()
    if log_dir is not None:
        atomic_write_text(log_dir / "audit.log", text)
    return read_audit(text, exit_code)
