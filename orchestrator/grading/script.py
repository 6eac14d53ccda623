"""The eval script (:func:`eval_script`) and who may write where while the tests run.

**Ownership.** With a test user, the repository's existing files and directories are root's
before the tests, directories ``0755`` and files not writable by others: the tests cannot
create, change, rename, replace or delete anything in the repository, nor touch ``.git``, the
environment or the eval directory. Only the *writable* paths are open to them: directories
made root's with mode ``1777`` (sticky: the test user creates entries, and changes only its
own), created first when missing, and files made writable in place; inside an output
directory, what an earlier run in the same container left is given back to the test user, so
that a runner can clear its own logs again. Which paths those are is
data: the ones environment validation saw the gold run write (:func:`writable_paths`, from
the listings a *recording* run of the script leaves, in the permissive layout the recording
needs), plus :data:`DEFAULT_WRITABLE`.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Iterable, Sequence

from orchestrator.grading import audit
from orchestrator.grading.bytecode_sweep import sweep_lines
from orchestrator.grading.markers import wrap_test_command
from orchestrator.models import Instance
from orchestrator.recipes.recipe import Recipe, suite_command, touched_test_files
from orchestrator.recipes.services import service_start_lines, service_stop_lines
from orchestrator.safe_git import SHELL_GIT_FUNCTION
from sandbox_tools.contract import ACTIVATE, EVAL_DIR, TESTBED

EVAL_SCRIPT_PATH = f"{EVAL_DIR}/eval.sh"
TEST_PATCH_PATH = f"{EVAL_DIR}/test.patch"
OUTPUT_PATH = f"{EVAL_DIR}/output.txt"
OUTPUT_FIFO = f"{EVAL_DIR}/output.fifo"
# what a recording run lists (root's, in the eval directory the tests cannot read)
BEFORE_LIST = f"{EVAL_DIR}/tree-before.txt"
AFTER_LIST = f"{EVAL_DIR}/tree-after.txt"
CHANGED_LIST = f"{EVAL_DIR}/files-changed.txt"
NONCE_VARIABLE = "SWE_GREEN_NONCE"
# the unprivileged user the tests run as (``unprivileged_tests`` setting); Debian's nobody
TEST_PATCH_FAILED = ">>>>> SWE_GREEN_TEST_PATCH_FAILED"
# writable whatever validation saw, output directories at the repository root: pytest's cache
# (pytest only warns without it, and a suite that turns warnings into errors fails), the
# hypothesis database (hypothesis checks that it could write there, and warns, without
# writing: astropy's conftest then fails). Not .tox: a tox environment's site-packages is on
# sys.path (sphinx); validation records the few directories of it that tox writes
DEFAULT_WRITABLE = (".pytest_cache/", ".hypothesis/")

_NOT_GIT = f"{TESTBED} -path {TESTBED}/.git -prune -o"
# only what is not root's yet: a chown, even to the same owner, copies the whole file up into
# the container's layer (sympy's tree: 2.5 s, 55 MB, and as long again to remove the container)
_NOT_ROOTS = "\\( ! -user root -o ! -group root \\)"


def eval_script(
    instance: Instance,
    recipe: Recipe,
    test_user: str | None = None,
    writable: Sequence[str] = (),
    record: bool = False,
    directives: Sequence[str] | None = None,
) -> str:
    """The bash script that runs the instance's tests; it can run again (idempotent).

    It expects the test patch at :data:`TEST_PATCH_PATH` and the run's nonce in
    ``$SWE_GREEN_NONCE`` (it makes one when that is unset), which it takes out of the
    environment at once: only its own ``echo`` lines print it, the test process never gets
    it. Order: the environment, the recipe's environment variables and eval commands, reset
    the files the test patch touches to the base commit (remove those that do not exist
    there), apply the test patch, run the test command between the markers, restore the test
    files. Every git command runs with hooks and fsmonitor off.

    Before the tests every ``__pycache__`` and stray ``*.pyc``/``*.pyo`` of the working tree
    is removed but the image's own bytecode, verified against its manifest and fresh for the
    source beside it (:mod:`orchestrator.grading.bytecode_sweep`), and Python runs with
    ``PYTHONDONTWRITEBYTECODE``: nothing compiled before the tests (a patch's bytecode, say)
    is loaded instead of the source.

    With ``test_user`` the test command runs as that user (``setpriv``), with a home of its
    own, and the repository is read-only to it but for ``writable`` and
    :data:`DEFAULT_WRITABLE` (see the module doc). With ``record`` instead, every directory
    is writable (root's, sticky) and the script lists the tree before and after the tests
    and the files they changed, for :func:`writable_paths`. Whatever the user left running
    is killed before the end marker. ``directives``: what the runner gets instead of the
    instance's test files (a selection of tests, :func:`.recipe.suite_command`).
    """
    user = shlex.quote(test_user) if test_user else ""
    return "\n".join(
        [
            *_prelude(instance, recipe, user),
            *_ownership(writable, record),
            *audit.start_lines(),
            wrap_test_command(
                suite_command(recipe, instance, directives),
                prefix="as_test_user",
                after='[ -z "$test_user" ] || as_test_user "kill -KILL -1" >/dev/null 2>&1',
            ),
            *audit.stop_lines(),
            *(_record_after() if record else []),
            *service_stop_lines(recipe),
            "reset_test_files",
            "",
        ]
    )


def _prelude(instance: Instance, recipe: Recipe, user: str) -> list[str]:
    """Everything before the ownership step: the environment, the test patch, no bytecode."""
    base = shlex.quote(instance.base_commit)
    files = " ".join(shlex.quote(f) for f in touched_test_files(instance.test_patch))
    return [
        "#!/bin/bash",
        f"# Grading script of {instance.instance_id}, written by swe-green. Safe to run again.",
        "exec 2>&1",
        "umask 022",
        f"rm -f {BEFORE_LIST} {AFTER_LIST} {CHANGED_LIST}",
        f'nonce=${{{NONCE_VARIABLE}:-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d " \\n")}}',
        f"unset {NONCE_VARIABLE}",
        SHELL_GIT_FUNCTION,
        f"test_user={user}",
        "as_test_user() {",
        # never with the audit FIFO's descriptor (7): the tests could read the records
        '    if [ -z "$test_user" ]; then bash -c "$1" 7>&-; return; fi',
        '    setpriv --reuid="$test_user" --regid="$(id -g "$test_user")" --clear-groups \\',
        '        env HOME="$test_home" USER="$test_user" LOGNAME="$test_user" bash -c "$1" 7>&-',
        "}",
        f"source {ACTIVATE}",
        *(f"export {name}={shlex.quote(value)}" for name, value in recipe.env.items()),
        "export PYTHONDONTWRITEBYTECODE=1",
        *recipe.eval_commands,
        *service_start_lines(recipe, EVAL_DIR),
        f"cd {TESTBED}",
        f"test_files=({files})",
        "reset_test_files() {",
        "    local f",
        '    for f in "${test_files[@]}"; do',
        f'        if git cat-file -e {base}:"$f" 2>/dev/null; then',
        f'            git checkout -q {base} -- "$f"',
        "        else",
        '            rm -rf -- "$f"',
        "        fi",
        "    done",
        "}",
        "reset_test_files",
        f"if ! git apply -v {TEST_PATCH_PATH}; then",
        f"    echo '{TEST_PATCH_FAILED}'",
        "    reset_test_files",
        "    exit 3",
        "fi",
        # nothing compiled before the tests is loaded but the image's own, verified and fresh
        *sweep_lines(TESTBED),
    ]


def _ownership(writable: Sequence[str], record: bool) -> list[str]:
    """As root, before the tests: the repository root's, writable only where it may be."""
    if record:  # every directory writable (sticky): what the tests write is to be seen
        # the output directories grading makes anyway are made first, so that their parent
        # (the repository root) changes only if the tests write there themselves
        made = " ".join(shlex.quote(f"{TESTBED}/{p.rstrip('/')}") for p in DEFAULT_WRITABLE)
        layout = [
            f"    mkdir -p {made}",
            f"    find {_NOT_GIT} -type d {_NOT_ROOTS} -exec chown root: {{}} +",
            f"    find {_NOT_GIT} -type d ! -perm -1777 -exec chmod a+rwx,+t {{}} +",
            f"    find {_NOT_GIT} -type f -user root -perm /022 -exec chmod go-w {{}} +",
            f"    find {_NOT_GIT} -printf '%y %P\\n' > {BEFORE_LIST}",
            f"    touch {EVAL_DIR}/tree-mark",
        ]
    else:
        paths = " ".join(shlex.quote(p) for p in _normalized([*DEFAULT_WRITABLE, *writable]))
        layout = [
            f"    find {_NOT_GIT} {_NOT_ROOTS} -exec chown -h root: {{}} +",
            f"    find {_NOT_GIT} -type d -perm /7022 -exec chmod go-w,-t,u-s,g-s {{}} +",
            f"    find {_NOT_GIT} -type f -perm /7022 -exec chmod go-w,u-s,g-s {{}} +",
            f"    for w in {paths}; do",
            "        tree=; case $w in */) tree=1; w=${w%/} ;; esac",
            f'        p={TESTBED}/$w; [ "$w" = . ] && p={TESTBED}',
            # never through a symbolic link (out of the repository, or onto another path)
            '        [ "$(realpath -m -- "$p")" = "$p" ] || continue',
            '        if [ -f "$p" ]; then chmod a+w -- "$p"; continue; fi',
            '        mkdir -p -- "$p" && chmod 1777 -- "$p" && [ -n "$tree" ] || continue',
            # an output directory: all of it (what an earlier run left there too), and what
            # an earlier run left is the test user's again, to replace or remove as it made it
            # (a file of several links is none of its own: left root's)
            '        find "$p" -mindepth 1 \\( -type d -exec chmod 1777 {} + \\) \\',
            "            -o \\( -type f -exec chmod a+w {} + \\)",
            '        find "$p" -mindepth 1 \\( -type d -o -type f -links 1 \\) \\',
            '            -exec chown -h "$test_user:" {} +',
            "    done",
        ]
    return [
        'if [ -n "$test_user" ]; then',
        *layout,
        '    test_home=$(mktemp -d /tmp/swe-green-home.XXXXXX) && chown "$test_user:" "$test_home"',
        "fi",
    ]


def _record_after() -> list[str]:
    """As root, after the tests: the tree and the files newer than the mark."""
    return [
        'if [ -n "$test_user" ]; then',
        f"    find {_NOT_GIT} -printf '%y %P\\n' > {AFTER_LIST}",
        # files the tests rewrote, and directories whose entries changed (a file or directory
        # made and removed again leaves the directory's time: the listings cannot show it)
        f"    find {_NOT_GIT} \\( -type f -o -type d \\) -newer {EVAL_DIR}/tree-mark "
        f"-printf '%P\\n' > {CHANGED_LIST}",
        "fi",
    ]


def _normalized(paths: Iterable[str]) -> list[str]:
    """``paths`` as clean relative paths (``.`` for the root, a trailing ``/`` kept: an output
    directory); none into ``.git`` or out of the repository, none inside an output directory
    of the list (all of it is writable already; a file recorded there, missing now, would be
    made a directory: pytest's ``.pytest_cache/v/cache/nodeids``)."""
    kept: list[str] = []
    for path in paths:
        clean = posixpath.normpath(path or ".")
        top = clean.split("/", 1)[0]
        if clean.startswith("/") or top in ("..", ".git"):
            continue
        clean += "/" if path.endswith("/") and clean != "." else ""
        if clean not in kept:
            kept.append(clean)
    trees = [p for p in kept if p.endswith("/")]
    return [p for p in kept if not any(p != t and p.startswith(t) for t in trees)]


def writable_paths(
    before: Iterable[str], after: Iterable[str], changed: Iterable[str]
) -> list[str]:
    """The paths a recorded run shows the tests writing, relative to the repository.

    ``before``/``after`` are the tree listings (``<type> <path>``, ``find -printf '%y %P'``),
    ``changed`` the files and directories newer than the start of the tests. Writable
    become: an existing directory that gained or lost an entry other than a new directory
    (itself only); a new directory whose parent existed, an output directory (``path/``:
    created beforehand, so its parent stays closed, and all of it writable); an existing
    file the tests rewrote; an existing directory whose entries changed while the listings
    show none (the tests made something there and removed it again: pylint's
    ``test_parseable_file_path`` makes ``tests/testbed`` and removes it), itself only.
    """
    old = _listing(before)
    new = _listing(after)
    found: set[str] = set()
    listed_change: set[str] = set()  # directories that gained or lost an entry, per listings
    for path in new.keys() - old.keys():
        parent = posixpath.dirname(path) or "."
        listed_change.add(parent)
        if parent in old:
            found.add(f"{path}/" if new[path] == "d" else parent)
    for path in old.keys() - new.keys():
        parent = posixpath.dirname(path) or "."
        listed_change.add(parent)
        if parent in new:
            found.add(parent)
    for path in (p or "." for p in changed):
        if old.get(path) == "f":
            found.add(path)
        elif old.get(path) == "d" and new.get(path) == "d" and path not in listed_change:
            found.add(path)
    return sorted(found)


def unexplained_directories(
    before: Sequence[str], after: Sequence[str], changed: Iterable[str]
) -> list[str]:
    """Directories whose entries changed where the listings show only new directories.

    :func:`writable_paths` makes a new directory an output directory (created beforehand, its
    parent left closed); but the parent's time also moves when the tests made a file there
    and removed it again (pylint's pyreverse tests write ``classes_No_Name.dot`` at the root
    beside a new ``.benchmarks``), which the listings cannot tell apart. Validation checks
    these directories closed (:mod:`orchestrator.validation.validation`)."""
    old, new = _listing(before), _listing(after)
    found = set(writable_paths(before, after, []))
    trees = [t for t in [*DEFAULT_WRITABLE, *found] if t.endswith("/")]  # open whole already
    parents = {posixpath.dirname(path) or "." for path in new.keys() - old.keys()}
    return sorted(
        path
        for path in (p or "." for p in changed)
        if path in parents and old.get(path) == "d" and new.get(path) == "d"
        and path not in found and not any(f"{path}/".startswith(t) for t in trees)
    )  # fmt: skip


def _listing(lines: Iterable[str]) -> dict[str, str]:
    entries: dict[str, str] = {}
    for line in lines:
        kind, _, path = line.partition(" ")
        if kind:
            entries[path or "."] = kind
    return entries
