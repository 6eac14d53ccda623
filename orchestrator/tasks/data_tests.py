"""The tests that read a change's test data. Many projects test with data files (SQL and
YAML fixtures, expected outputs) that one parametrized test module reads from a folder:
a fix's test part then adds or changes those files and no Python test. The modules that read
a changed file are found in the tests' Python code at the change's commit (pure functions
over the sources; :func:`data_directives` reads them from the mirror):

- a folder is named by a module when its last two names appear in the module's string
  literals as a path (``"test/fixtures/dialects"``, ``os.path.join("test", "fixtures",
  "dialects")``, ``ROOT / "fixtures" / "dialects"``); the deepest folder of the data file
  that some module names counts;
- a test module (``test_*.py``, ``*_test.py``) that names it reads it; so does a test module
  that uses what a helper defines there (a function, class or constant whose code names the
  folder): a ``conftest.py``'s under its folder by the name alone, another helper's where the
  module also names the helper.

The task's test command then runs those modules with ``-k`` and the data files' names below
the folder (:func:`k_term`, ``or``-ed): pytest matches them in the parametrized ids, so the
run holds the tests of the changed data, not the thousands beside them."""

from __future__ import annotations

import ast
import keyword
import os
import re
import subprocess
from pathlib import Path, PurePosixPath

from orchestrator.repos.git_commands import GIT_ENV, GitError, git
from orchestrator.safe_git import GIT
from orchestrator.tasks.changes import is_test_path

TEST_MODULE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test)\.py$")
# a one-line string literal (any prefix but f-strings' expressions are read as text too)
_STRING = re.compile(r"""[rRbBuUfF]{0,2}(["'])((?:\\.|(?!\1)[^\\\n])*)\1""")
_K_WORDS = {"and", "or", "not"}


def data_paths(paths: list[str]) -> list[str]:
    """The test data among a change's ``paths``: files of the tests that are not Python."""
    return [p for p in paths if is_test_path(p) and not p.endswith(".py")]


def k_term(path: str, folder: str) -> str:
    """pytest's ``-k`` term for the tests of the data file ``path`` read from ``folder``:
    the words of the names below the folder (sub-folders, and the file's stem, cut at what
    is no identifier's) that are identifiers and no keyword, ``and``-ed
    (``tsql/create_view.sql`` -> ``tsql and create_view``, ``LT02-indent.yml`` -> ``LT02 and
    indent``); empty when none is."""
    below = PurePosixPath(path).relative_to(folder).parts
    names = [*below[:-1], below[-1].split(".", 1)[0]]
    words = [word for name in names for word in re.split(r"\W+", name)]
    kept = [
        w for w in words if w.isidentifier() and not keyword.iskeyword(w) and w not in _K_WORDS
    ]  # fmt: skip
    return " and ".join(dict.fromkeys(kept))


def reading_modules(sources: dict[str, str], data_path: str) -> tuple[list[str], str]:
    """The test modules of ``sources`` (the tests' Python files: path -> text) that read
    ``data_path`` (see the module doc), sorted, and the folder they name; ``([], "")`` when
    none does."""
    parents = PurePosixPath(data_path).parents
    for folder in [p for p in parents if len(p.parts) >= 2]:
        key = f"/{'/'.join(folder.parts[-2:])}/"
        naming = [path for path, text in sources.items() if key in _literal_path(text)]
        if not naming:
            continue
        modules = {path for path in naming if TEST_MODULE.search(path)}
        for helper in (path for path in naming if not TEST_MODULE.search(path)):
            modules |= _users(sources, helper, _defining(sources[helper], key))
        if modules:
            return sorted(modules), str(folder)
    return [], ""


def data_directives(mirror: Path, commit: str, paths: list[str]) -> list[str]:
    """The test command's arguments for a change whose test part is only the data files
    ``paths`` (at ``commit`` of the bare ``mirror``): the modules that read them, then ``-k``
    and the ``or`` of their terms (:func:`k_term`); empty when no module reads them or no
    name selects."""
    folders = {name for path in paths for name in PurePosixPath(path).parent.parts[1:]}
    sources = _test_sources(mirror, commit, folders)
    modules: list[str] = []
    terms: list[str] = []
    for path in paths:
        readers, folder = reading_modules(sources, path)
        term = k_term(path, folder) if readers else ""
        if term:
            modules.extend(readers)
            terms.append(f"({term})" if " " in term else term)
    if not modules:
        return []
    return [*dict.fromkeys(modules), "-k", " or ".join(dict.fromkeys(terms))]


def _literal_path(text: str) -> str:
    """The module's string literals in order, joined as one path (``/`` around)."""
    parts = [match.group(2).replace("\\\\", "/") for match in _STRING.finditer(text)]
    return f"/{'/'.join(part.strip('/') for part in parts)}/"


def _defining(text: str, key: str) -> set[str]:
    """The top-level names (functions, classes, assigned constants) of a helper module whose
    code names the folder ``key``."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in tree.body:
        segment = ast.get_source_segment(text, node) or ""
        if key not in _literal_path(segment):
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _users(sources: dict[str, str], helper: str, names: set[str]) -> set[str]:
    """The test modules that use one of ``names`` of ``helper``: a conftest's under its
    folder, another helper's where the module names the helper's module too."""
    if not names:
        return set()
    used = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names))) + r")\b")
    helper_path = PurePosixPath(helper)
    if helper_path.name == "conftest.py":
        folder = str(helper_path.parent)
        return {
            path for path, text in sources.items()
            if TEST_MODULE.search(path)
            and (folder == "." or path.startswith(f"{folder}/"))
            and used.search(text)
        }  # fmt: skip
    module = re.compile(rf"\b{re.escape(helper_path.stem)}\b")
    return {
        path for path, text in sources.items()
        if TEST_MODULE.search(path) and module.search(text) and used.search(text)
    }  # fmt: skip


def _test_sources(mirror: Path, commit: str, words: set[str]) -> dict[str, str]:
    """The tests' Python files at ``commit`` that hold one of ``words`` (the data folders'
    names): path -> text, read in one ``git cat-file --batch``."""
    pattern = ["-e", *(arg for word in sorted(words) for arg in ("-e", word))][1:]
    try:
        listed = git(["grep", "-l", "-F", "-z", *pattern, commit, "--", "*.py"], mirror)
    except GitError:  # git grep exits 1 when nothing matches
        return {}
    paths = [
        name.split(":", 1)[1] for name in listed.split("\0") if ":" in name
    ]  # fmt: skip
    paths = [p for p in paths if is_test_path(p)]
    if not paths:
        return {}
    done = subprocess.run(
        [*GIT, "cat-file", "--batch"], cwd=mirror, env=os.environ | GIT_ENV,
        input="".join(f"{commit}:{path}\n" for path in paths).encode(),
        capture_output=True, check=False,
    )  # fmt: skip
    sources: dict[str, str] = {}
    data, at = done.stdout, 0
    for path in paths:
        end = data.index(b"\n", at)
        header = data[at:end].split()
        at = end + 1
        if len(header) < 3 or header[1] != b"blob":  # missing from the snapshot: not read
            continue
        size = int(header[2])
        sources[path] = data[at : at + size].decode("utf-8", "replace")
        at += size + 1
    return sources
