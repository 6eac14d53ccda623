"""What a reinstall may leave behind: the rules that keep a patch's build step from planting.

A patch that changes a build input makes grading run the install command again, as root,
in a container of its own (:mod:`.reinstall`); the patch's ``setup.py`` runs in it. Once
every process of it has ended, what it changed is listed (the engine's list of the
container's changes, read from the host, and git's comparison of the repository with the
working tree as it stood after the patch was applied) and judged here, by path (and, for
``.pth`` files, content). Allowed:

- in the repository, build products only: an ``.egg-info``, ``build/``, ``.eggs/``,
  bytecode, compiled extension modules (``.so``/``.pyd``) that shadow no Python module, and
  new or rewritten files git ignores (generated sources, version files), except test
  infrastructure (:func:`is_harness_file`), new top-level modules (first on the test
  runner's path), ``.gitignore`` files, nested repositories and anything under ``.git``
  but its index. A change to a file that existed after the patch was applied (tracked, or
  untracked and not ignored) and a new file git neither tracks nor ignores are refused
  (:class:`RepoChanges`);
- in site-packages, the package itself when the install copies it there (not editable)
  and a RECORD the reinstall wrote lists the file;
- in site-packages, the package's own metadata (``*.dist-info``/``*.egg-info``/``*.egg``
  directories, ``*.egg-link``, setuptools' ``__editable__`` finder, which a ``RECORD`` lists
  and the install's ``.pth`` imports, and that ``.pth``, ``easy-install.pth``,
  setuptools' ``distutils-precedence.pth``) with ``.pth`` lines that only add paths or are the
  ones setuptools writes, and new files a changed ``RECORD`` lists (a dependency pip
  installed), except ``.pth`` files, ``sitecustomize``/``usercustomize``, pytest's own
  packages and modules named like the repository's own; files that were there before (an
  installed package's) may not change;
- console scripts in a ``bin`` directory (the package's own, written again by the install),
  except the runners' names (``pytest``, ``python``, ...) and the system's programs' (a
  ``sleep`` or ``git`` found first on a PATH would run as root in the grading container),
  and nothing in the system's own program directories (``/usr/bin``, ``/bin``, ...);
- scratch space (``/tmp``, caches, logs) and the files the engine rewrites when the
  container changes networks (``/etc/hosts``, ``/etc/resolv.conf``, ``/etc/hostname``).

What a ``RECORD`` lists is judged by content as well (:func:`record_problems`): a file whose
SHA-256 is not the one its ``RECORD`` gives is refused, wherever it is.

Bytecode the reinstall wrote is removed before the tests (:mod:`.reinstall`): it is a
cache, and could hold unchecked-hash ``.pyc`` files that Python loads instead of a source.

Anything else (a ``.pth`` that runs code or cannot be read, a module no ``RECORD`` lists, a
``pytest11`` entry point, ``/opt/swe/activate.sh``, ``/etc``, ``/root``, ``/usr`` outside
site-packages, the package's ``__init__.py`` rewritten) is a problem: grading refuses the
patch (``no_op``/``reinstall_refused``) instead of running the tests with it. All pure.
"""

from __future__ import annotations

import base64
import binascii
import csv
import io
import posixpath
import re
from collections.abc import Iterable

from pydantic import BaseModel, Field

from orchestrator.recipes.harness_files import is_harness_file
from sandbox_tools.contract import TESTBED

SCRATCH = (
    "/tmp/", "/var/tmp/", "/root/.cache/", "/var/cache/", "/var/log/", "/run/", "/dev/",
    "/proc/", "/sys/", "/var/lib/apt/", "/var/lib/dpkg/",
    # the engine's own, rewritten when the container joins or leaves a network
    "/etc/hosts", "/etc/resolv.conf", "/etc/hostname",
)  # fmt: skip
_SITE = re.compile(r"^(?P<site>.*/(?:site|dist)-packages)/(?P<rel>.+)$")
_META_DIR = re.compile(r"\.(?:dist-info|egg-info|egg)$")
# the runners, and the system's tools the grading's own scripts run (on the activated PATH)
_RUNNERS = re.compile(
    r"^(?:pytest|py\.test|python[\d.]*|pip[\d.]*|tox|nosetests|activate.*|git|bash|sh|env"
    r"|find|chmod|chown|patch|setpriv|runuser|su|rm|mkdir|kill|cat|tar|timeout|xargs|sort"
    r"|seq|mkfifo|tail|head|grep|sed|cp|mv|ls|tr|sleep|sha256sum|diff|id)$"
)
# the system's programs: no install of a Python package writes there
_SYSTEM_BIN = ("/usr/bin/", "/bin/", "/usr/sbin/", "/sbin/", "/usr/local/sbin/")
# the finder module setuptools' editable install (PEP 660) writes beside its .pth
_EDITABLE_FINDER = re.compile(r"^__editable___[\w.-]+_finder\.py$")
_FRAMEWORK = re.compile(r"^(?:_pytest|pytest|pluggy|py|unittest|sitecustomize|usercustomize)\b")
# the .pth lines setuptools and pip write that run code
_PTH_CODE_OK = (
    re.compile(r"^import sys; sys\.__plen = len\(sys\.path\)$"),
    re.compile(r"^import sys; new = sys\.path\[sys\.__plen:\];.*sys\.__egginsert = p\+len\(new\)$"),
    re.compile(r"^import __editable___[\w.-]+_finder; __editable___[\w.-]+_finder\.install\("),
    re.compile(r"^import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os\.environ\.get\(var,"),
)


class RepoChanges(BaseModel):
    """The repository after the build against its working tree after the patch was applied
    (paths relative to it): which of those files changed or are gone, which files are new
    and neither tracked nor ignored by git, and which files there were."""

    changed: set[str] = Field(default_factory=set)
    untracked: set[str] = Field(default_factory=set)
    known: set[str] = Field(default_factory=set)


def pth_problem(text: str) -> str | None:
    """Why the ``.pth`` content is not what a package's own install writes (None: it is)."""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith(("import ", "import\t")):
            continue  # a path (or a comment): only adds to sys.path
        if not any(pattern.match(stripped) for pattern in _PTH_CODE_OK):
            return f"runs code at start-up: {stripped[:80]!r}"
    return None


class Written:
    """What the reinstall wrote, as read in the container: the changed files, and the text of
    those the rules read (``RECORD``, ``.pth``, ``entry_points.txt``)."""

    def __init__(
        self,
        changed: Iterable[str],
        texts: dict[str, str] | None = None,
        existed: Iterable[str] = (),
        repo_modules: Iterable[str] = (),
        copies_sources: bool = False,
        repo: RepoChanges | None = None,
        unreadable: Iterable[str] = (),
        tools: Iterable[str] = (),
    ) -> None:
        self.changed = sorted(set(changed))
        # how the repository's files compare with the working tree after the patch (None:
        # not compared, only test infrastructure and .git are refused there)
        self.repo = repo
        self.unreadable = set(unreadable)  # files the rules read that are no regular file
        self.tools = set(tools)  # the names of the system's programs (``/usr/bin``, ...)
        self.texts = texts or {}
        self.existed = set(existed)  # site-packages and bin files there before the reinstall
        self.repo_modules = set(repo_modules)  # the repository's top-level packages/modules
        # the install copies the package into site-packages (not editable): there the
        # repository's own package, as a RECORD the reinstall wrote lists it, is its output
        self.copies_sources = copies_sources
        self.recorded = _recorded(
            {p: t for p, t in self.texts.items() if posixpath.basename(p) == "RECORD"}
        )
        # the directories those files are in (a reinstall re-creates them: a directory is
        # no module, what it holds is checked file by file), and
        self.recorded_dirs = {d for f in self.recorded for d in _parents(f)}
        # directories that held files before it (an uninstall empties them; what is written
        # into them is checked file by file)
        self.existed_dirs = {d for f in self.existed for d in _parents(f)}


def reinstall_problems(
    written: Written, repo_dir: str = TESTBED, runner_files: Iterable[str] = ()
) -> list[str]:
    """What of ``written.changed`` the reinstall may not write (see the module doc)."""
    runners = list(runner_files)
    problems: list[str] = []
    for path in written.changed:
        why = _problem(path, written, repo_dir, runners)
        if why:
            problems.append(f"{path} ({why})")
    return problems


# one return per rule, in the order they are tried: a rule table read top to bottom
def _problem(  # noqa: C901, PLR0911, PLR0912
    path: str, written: Written, repo_dir: str, runners: list[str]
) -> str | None:
    entry_points = {p: t for p, t in written.texts.items() if p.endswith("entry_points.txt")}
    pth_texts = {p: t for p, t in written.texts.items() if p.endswith(".pth")}
    recorded = written.recorded
    if path.startswith(SCRATCH):
        return None
    if path in written.unreadable:
        return "cannot be read as a regular file"
    if path == repo_dir or path.startswith(repo_dir + "/"):
        rel = path[len(repo_dir) + 1 :]
        if rel.startswith(".git/"):
            return None if rel in (".git/index", ".git/index.lock") else "changes .git"
        if "__pycache__/" in rel or rel.endswith((".pyc", ".pyo")):
            return None  # removed before the tests anyway
        if rel.endswith(".egg-info") or ".egg-info/" in rel or rel.startswith(("build/", ".eggs/")):
            return _entry_point_problem(path, entry_points)
        if is_harness_file(rel, runners):
            return "test infrastructure"
        return None if written.repo is None else repo_file_problem(rel, written.repo)
    name = posixpath.basename(path)
    if path in entry_points and "[pytest11]" in entry_points[path]:
        return "registers a pytest plugin (pytest11 entry point)"
    site = _SITE.match(path)
    if site:
        rel = site["rel"]
        top = rel.split("/", 1)[0]
        if name.endswith(".pth"):
            if not (
                name.startswith("__editable__")
                or name in ("easy-install.pth", "distutils-precedence.pth")
            ):
                return "a .pth file of no package's own metadata"
            return pth_problem(pth_texts.get(path, ""))
        if top.startswith("__editable__"):
            return _editable_problem(path, top, written, pth_texts)
        if _META_DIR.search(top) or top.endswith(".egg-link"):
            return None
        if _FRAMEWORK.match(top):
            return "changes the test framework or a start-up hook"
        module = re.split(r"[./]", top, maxsplit=1)[0]
        if module in written.repo_modules:
            if written.copies_sources and (
                path in recorded or path in written.recorded_dirs or path in written.existed_dirs
            ):
                return None
            return "shadows the repository's own package"
        if path in written.existed:
            return "changes a file of an installed package"
        if path in recorded:
            return None
        return "no installed package's RECORD lists it"
    if path.startswith(_SYSTEM_BIN):
        return "a system program"
    if posixpath.basename(posixpath.dirname(path)) == "bin":
        # a console script runs the package's code, which the patch changes anyway; only
        # the runners' and the system's programs (found first on a PATH) are the grading's
        if _RUNNERS.match(name) or name in written.tools:
            return "replaces a runner's or a tool's script"
        return None
    return "outside the repository and site-packages"


_EXTENSION = re.compile(r"\.(?:so|pyd)$")
_MODULE = re.compile(r"\.(?:py|so|pyd)$")


def repo_file_problem(rel: str, repo: RepoChanges) -> str | None:  # noqa: PLR0911 a rule table
    """Why the build may not have written ``rel`` in the repository (None: a build product
    or a file it left as it was), beyond bytecode, build directories and test
    infrastructure (see the module doc)."""
    name = posixpath.basename(rel)
    if name == ".gitignore":
        return "a .gitignore (decides which files git ignores)"
    if name == ".git" or "/.git/" in rel:
        return "a git repository inside the repository"
    known_tops = {path.split("/", 1)[0] for path in repo.known}
    new_top = rel.split("/", 1)[0] not in known_tops
    if _EXTENSION.search(name):
        module = name.split(".", 1)[0]
        folder = posixpath.dirname(rel)
        sources = {posixpath.join(folder, module + ".py"), posixpath.join(folder, module)}
        if module == "__init__" or any(
            path in sources or path.startswith(posixpath.join(folder, module) + "/")
            for path in repo.known
        ):
            return "a compiled module that shadows a Python module"
        return "a new top-level module (first on the test runner's path)" if new_top else None
    if rel in repo.changed:
        return "changes a file that existed after the patch was applied"
    if rel in repo.known:
        return None  # written again as it was
    if new_top and _MODULE.search(name):
        return "a new top-level module (first on the test runner's path)"
    if rel in repo.untracked:
        return "a new file git does not ignore"
    return None  # generated, and ignored by git


def _editable_problem(
    path: str, top: str, written: Written, pth_texts: dict[str, str]
) -> str | None:
    """Why a file named like setuptools' editable install is not its finder: another name,
    no ``RECORD`` lists it, or no ``.pth`` of the install imports it."""
    if "/" in path.split(top, 1)[1] or not _EDITABLE_FINDER.match(top):
        return "not a file setuptools' editable install writes"
    if path not in written.recorded:
        return "no installed package's RECORD lists it"
    module = top.removesuffix(".py")
    if not any(re.search(rf"\bimport {re.escape(module)}\b", t) for t in pth_texts.values()):
        return "an editable finder no .pth of the install imports"
    return None


def recorded_hashes(texts: dict[str, str]) -> dict[str, str]:
    """The SHA-256 each ``RECORD`` among ``texts`` gives its files (absolute path -> hex)."""
    found: dict[str, str] = {}
    for record, text in texts.items():
        if posixpath.basename(record) != "RECORD":
            continue
        site = posixpath.dirname(posixpath.dirname(record))
        for row in csv.reader(io.StringIO(text)):
            if len(row) < 2 or not row[1].startswith("sha256="):
                continue
            encoded = row[1].removeprefix("sha256=")
            try:
                digest = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).hex()
            except (ValueError, binascii.Error):
                digest = "unreadable"
            found[posixpath.normpath(posixpath.join(site, row[0]))] = digest
    return found


def record_problems(
    changed: Iterable[str], hashes: dict[str, str], digests: dict[str, str]
) -> list[str]:
    """What of ``changed`` is not what its ``RECORD`` says (``hashes``, see
    :func:`recorded_hashes`), by the SHA-256 of its content now (``digests``)."""
    problems = []
    for path in sorted(set(changed)):
        expected = hashes.get(path)
        if expected is None or path.endswith((".pyc", ".pyo")):
            continue
        if digests.get(path) != expected:
            problems.append(f"{path} (its content is not what its RECORD lists)")
    return problems


def _entry_point_problem(path: str, entry_points: dict[str, str]) -> str | None:
    if path in entry_points and "[pytest11]" in entry_points[path]:
        return "registers a pytest plugin (pytest11 entry point)"
    return None


def _parents(path: str) -> list[str]:
    """The directories above ``path``, nearest first, up to (not including) the root."""
    found = []
    while (path := posixpath.dirname(path)) not in ("/", ""):
        found.append(path)
    return found


def _recorded(records: dict[str, str]) -> set[str]:
    """The absolute paths the ``RECORD`` files list (relative to their site-packages)."""
    found: set[str] = set()
    for record, text in records.items():
        site = posixpath.dirname(posixpath.dirname(record))
        for line in text.splitlines():
            rel = line.split(",", 1)[0].strip().strip('"')
            if rel:
                found.add(posixpath.normpath(posixpath.join(site, rel)))
    return found
