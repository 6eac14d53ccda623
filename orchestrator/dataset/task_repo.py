"""SWE-bench 5.x task repositories and dataset aliases, as sources of instances.

A task repository holds one directory per instance under ``tasks/`` (``swebench.task.repo``
of the ``swebench`` 5.x package, which its ``swebench dataset build`` compiles into the Hugging
Face datasets)::

    sweb.yaml                   the datasets and splits it publishes (not needed here)
    tasks/<instance_id>/
        task.yaml               metadata: instance_id, repo, version, base_commit, split,
                                datasets, image, log_parser, eval_type, ...
        tests.json              {"FAIL_TO_PASS": [...], "PASS_TO_PASS": [...]}
        problem_statement.md    the issue text
        test.patch              the tests that grade it
        gold.patch              the reference fix (validation applies it)
        hints.md                optional
        eval.sh, Dockerfile     the official harness's; not read (our recipes run the tests)

A task directory is read as the harness reads it (``load_task``): ``task.yaml``'s keys, each
file as its column (``patch``, ``test_patch``, ``problem_statement``, ``hints_text``), then
``tests.json``'s keys. Only the tasks of the requested split are kept (all when none says its
split); ``environment_setup_commit``, when ``task.yaml`` lacks it, is the base commit.

Only Python tasks can be graded: a task whose ``log_parser`` is not one of the harness's
Python parsers (or whose ``language`` is not Python) makes the whole repository a user error
naming the tasks.

A task repository is a directory or a git URL (``https://``, ``ssh://``, ``git@``,
``file://``, or any source ending in ``.git``), cloned shallowly into a temporary directory
for the process's lifetime.

Aliases name the Hugging Face datasets as SWE-bench 5.x's CLI does (``verified``, ``full``,
``lite``, ...); the multilingual and multimodal ones are refused (not Python).
"""

from __future__ import annotations

import atexit
import difflib
import functools
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

from orchestrator.atomic import atomic_write_text
from orchestrator.errors import UserError
from orchestrator.safe_git import GIT

TASKS_SUBDIR = "tasks"
TASK_FILE = "task.yaml"
TESTS_FILE = "tests.json"
# dataset columns kept as their own file in a task directory (the harness's AS_FILE)
AS_FILE = {
    "patch": "gold.patch",
    "test_patch": "test.patch",
    "problem_statement": "problem_statement.md",
}
OPTIONAL_FILE = {"hints_text": "hints.md"}
REQUIRED = (TASK_FILE, TESTS_FILE, "problem_statement.md", "test.patch")
_TEST_KEYS = ("FAIL_TO_PASS", "PASS_TO_PASS")  # what tests.json holds

# the harness's log parsers for Python repositories (swebench.harness.log_parsers.python)
PYTHON_PARSERS = frozenset(
    f"parse_log_{name}"
    for name in (
        "pytest", "pytest_options", "django", "pytest_v2", "seaborn", "sympy", "matplotlib",
        "astroid", "flask", "marshmallow", "pvlib", "pyvista", "sqlfluff", "xarray", "pydicom",
        "requests", "pylint", "astropy", "scikit", "sphinx",
    )
)  # fmt: skip

# SWE-bench 5.x's aliases (swebench.cli._datasets), with Lite, as the Hugging Face names
DATASET_ALIASES = {
    "verified": "princeton-nlp/SWE-bench_Verified",
    "full": "princeton-nlp/SWE-bench",
    "lite": "princeton-nlp/SWE-bench_Lite",
}
# the Hugging Face datasets' own names: (title, slug): how a summary and results.json name them
BENCHMARK_NAMES = {
    "princeton-nlp/SWE-bench_Verified": ("SWE-bench Verified", "swe-bench-verified"),
    "princeton-nlp/SWE-bench": ("SWE-bench", "swe-bench"),
    "princeton-nlp/SWE-bench_Lite": ("SWE-bench Lite", "swe-bench-lite"),
}
NOT_PYTHON_ALIASES = {
    "multilingual": "SWE-bench/SWE-bench_Multilingual",
    "multimodal": "SWE-bench/SWE-bench_Multimodal",
}
SUPPORTED = (
    "swe-green grades Python repositories: use verified, full or lite, a task repository of "
    "Python tasks, or a .jsonl/.json/.parquet file of Python instances"
)
_GIT_PREFIXES = ("https://", "http://", "ssh://", "git://", "git@", "file://")


def resolve_alias(source: str) -> str:
    """The Hugging Face name of an alias (case-insensitive); any other source as given. A
    non-Python dataset's alias is a user error, and so is a bare word that is no alias (a
    hub name is ``owner/name``): its message names the aliases and the closest one."""
    key = source.strip().lower()
    if key in NOT_PYTHON_ALIASES:
        raise UserError(
            f"Dataset {source!r} ({NOT_PYTHON_ALIASES[key]}) is not Python.", SUPPORTED + "."
        )
    if key in DATASET_ALIASES:
        return DATASET_ALIASES[key]
    if key and "/" not in key and "." not in key and not is_git_url(source):
        known = [*DATASET_ALIASES, *NOT_PYTHON_ALIASES]
        close = difflib.get_close_matches(key, known, n=1)
        guess = f"did you mean {close[0]!r}? " if close else ""
        raise UserError(
            f"Dataset {source!r} is not a file here nor a known alias "
            f"({', '.join(DATASET_ALIASES)}).",
            f"{guess}Use an alias, a Hugging Face name (owner/name) or a local "
            ".jsonl/.json/.parquet file.",
        )
    return source


def is_git_url(source: str) -> bool:
    """Whether ``source`` names a git repository to clone (not a local path or hub name)."""
    return source.startswith(_GIT_PREFIXES) or (
        source.endswith(".git") and not Path(source).expanduser().exists()
    )


def is_task_repo(path: Path) -> bool:
    """Whether ``path`` is a task repository: a ``tasks/`` directory with a ``task.yaml``."""
    tasks = path / TASKS_SUBDIR
    return tasks.is_dir() and any((d / TASK_FILE).is_file() for d in tasks.iterdir())


def _read(path: Path) -> str:
    with open(path, newline="", encoding="utf-8") as handle:  # CRLF in a patch stays
        return handle.read()


def load_task(task_dir: Path) -> dict[str, Any]:
    """One task directory as the dataset row the harness makes of it (see the module doc)."""
    missing = [name for name in REQUIRED if not (task_dir / name).is_file()]
    if missing:
        raise UserError(
            f"Task {task_dir} lacks {', '.join(missing)}.",
            "a task directory needs task.yaml, tests.json, problem_statement.md and "
            "test.patch (swebench dataset check lists what is wrong).",
        )
    try:
        row = yaml.safe_load((task_dir / TASK_FILE).read_text(encoding="utf-8")) or {}
        tests = json.loads((task_dir / TESTS_FILE).read_text(encoding="utf-8"))
    except (yaml.YAMLError, ValueError, OSError) as exc:
        raise UserError(
            f"Task {task_dir} cannot be read: {' '.join(str(exc).split())[:200]}",
            "task.yaml must be YAML and tests.json JSON (swebench dataset check).",
        ) from None
    if not isinstance(row, dict) or not isinstance(tests, dict):
        raise UserError(
            f"Task {task_dir} is malformed: task.yaml and tests.json must each hold a mapping.",
            "see swebench dataset check.",
        )
    for column, name in {**AS_FILE, **OPTIONAL_FILE}.items():
        path = task_dir / name
        row[column] = _read(path) if path.is_file() else ""
    row.update(tests)
    row.setdefault("instance_id", task_dir.name)
    if row.get("base_commit"):
        row.setdefault("environment_setup_commit", row["base_commit"])
    return row


def _not_python(row: dict[str, Any]) -> str | None:
    """Why ``row`` is not a Python task (its parser or language), or None."""
    language = str(row.get("language") or "python").lower()
    if language != "python":
        return f"language {language}"
    parser = row.get("log_parser")
    if parser and parser not in PYTHON_PARSERS:
        return f"log_parser {parser}"
    return None


def load_task_rows(repo: Path, split: str) -> list[dict[str, Any]]:
    """The rows of the tasks of ``split`` in the task repository ``repo``, by instance id
    (all tasks when none names a split). Non-Python tasks are a user error."""
    rows = [
        load_task(d) for d in sorted((repo / TASKS_SUBDIR).iterdir()) if (d / TASK_FILE).is_file()
    ]
    if any("split" in row for row in rows):
        rows = [row for row in rows if row.get("split") == split]
        if not rows:
            raise UserError(
                f"Task repository {repo} has no task in split {split!r}.",
                "pick a split its task.yaml files name (--split / SWE_GREEN_DATASET_SPLIT).",
            )
    foreign = [(row["instance_id"], why) for row in rows if (why := _not_python(row))]
    if foreign:
        shown = ", ".join(f"{iid} ({why})" for iid, why in foreign[:5])
        more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        raise UserError(
            f"Task repository {repo} holds {len(foreign)} task(s) that are not Python: "
            f"{shown}{more}.",
            SUPPORTED + ".",
        )
    return rows


@functools.lru_cache(maxsize=8)
def clone_task_repo(url: str) -> Path:
    """A shallow clone of the task repository at ``url``, removed when the process ends."""
    where = Path(tempfile.mkdtemp(prefix="swe-green-tasks-"))
    atexit.register(shutil.rmtree, where, True)
    done = subprocess.run(
        [*GIT, "clone", "-q", "--depth", "1", url, str(where / "repo")],
        capture_output=True, text=True, check=False, timeout=600,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},  # never wait for a password
    )  # fmt: skip
    if done.returncode != 0:
        error = " ".join(done.stderr.split())[:300]
        raise UserError(
            f"Cannot clone task repository {url}: {error}",
            "check the URL and that git can reach it (or pass a local directory).",
        )
    return where / "repo"


# what a written task's Dockerfile says: its environment is not the official harness's
_INFERRED_DOCKERFILE = (
    "# This task's environment is inferred from its repository's files by swe-green at\n"
    "# grading time (swe-green envs plan shows it); no image is published for it.\n"
    "FROM scratch\n"
)
# and its eval.sh: the markers the format requires, around the reason it cannot run alone
_INFERRED_EVAL = (
    "#!/bin/bash\n"
    "# This task's tests run in the environment swe-green infers for it (swe-green run\n"
    "# --dataset <this repository>); this script only marks the format's output.\n"
    "echo '>>>>> Start Test Output'\n"
    "echo 'graded by swe-green: no official environment for this task' >&2\n"
    "echo '>>>>> End Test Output'\n"
    "exit 2\n"
)


def write_task_repo(root: Path, rows: list[dict[str, Any]], dataset: str) -> Path:
    """``rows`` (dataset rows) written as a task repository at ``root``, in the dataset
    ``dataset`` (``sweb.yaml``; the ``tasks/`` of an earlier write replaced): per task
    ``task.yaml`` (the row's other keys, split ``test``, the derived image name, the pytest
    log parser, ``pass_and_fail``), ``tests.json``, the patches and statement as files, and
    a ``Dockerfile`` and ``eval.sh`` that say the environment is inferred here. It passes swebench's
    ``check_task_repo`` and loads back to the same rows; the official harness cannot build
    its environments."""
    tasks = root / TASKS_SUBDIR
    if tasks.exists():
        shutil.rmtree(tasks)
    tasks.mkdir(parents=True)
    config = {"datasets": [dataset], "splits": ["test"]}
    atomic_write_text(root / "sweb.yaml", yaml.safe_dump(config, sort_keys=False))
    files = {**AS_FILE, **OPTIONAL_FILE}
    for row in rows:
        instance_id = str(row["instance_id"])
        if not instance_id or "/" in instance_id or instance_id.startswith("."):
            raise ValueError(f"not a task directory name: {instance_id!r}")
        folder = tasks / instance_id
        folder.mkdir()
        meta = {k: v for k, v in row.items() if k not in files and k not in _TEST_KEYS}
        meta |= {
            "split": "test", "datasets": [dataset], "image": _derived_image(instance_id),
            "log_parser": meta.get("log_parser") or "parse_log_pytest",
            "eval_type": meta.get("eval_type") or "pass_and_fail",
        }  # fmt: skip
        task_yaml = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
        atomic_write_text(folder / TASK_FILE, task_yaml)
        tests = {key: list(row.get(key) or []) for key in _TEST_KEYS}
        atomic_write_text(folder / TESTS_FILE, json.dumps(tests, indent=1) + "\n")
        for column, name in files.items():
            text = row.get(column) or ""
            if text or name in REQUIRED or column == "patch":
                atomic_write_text(folder / name, text)  # as bytes: a patch's CRLF stays
        atomic_write_text(folder / "Dockerfile", _INFERRED_DOCKERFILE)
        atomic_write_text(folder / "eval.sh", _INFERRED_EVAL)
    return root


def _derived_image(instance_id: str) -> str:
    """The image name SWE-bench's harness derives for an instance."""
    return f"swebench/sweb.eval.x86_64.{instance_id}:latest".lower().replace("__", "_1776_")
