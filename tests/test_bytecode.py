"""Bytecode compiled with the image and checked before the tests (plan/bytecode.py).

The unit tests run the in-container program (bytecode_tool.py) and the eval script's sweep
(real bash, this Python) on a small package in a temporary tree; each attack is one row:
what a patch or a participant can leave in the repository before the tests, and what the
sweep must make of it. The container tests build the synthetic calc instance's image and look
at what it holds, and what the eval script keeps of it and removes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import py_compile
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.context.run_context import RunContext
from orchestrator.context.run_dir import RunDir
from orchestrator.dataset.synthetic_repos import CALC
from orchestrator.environments.build import prepare_instance
from orchestrator.grading.bytecode_sweep import sweep_lines
from orchestrator.grading.evaluation import run_tests
from orchestrator.models import CaseStatus as TS
from orchestrator.plan import bytecode_tool as tool
from orchestrator.plan.bytecode import MANIFEST, drop_manifest_command
from orchestrator.recipes.recipe import Recipe
from orchestrator.sandbox import Sandbox
from sandbox_tools.contract import TEST_USER

from .conftest import TEST_RUN_ID

TAG = sys.implementation.cache_tag
SOURCE = "def answer():\n    return 1\n"
PATCHED = "def answer():\n    return 2\n"


def _pyc(path: Path) -> Path:
    return Path(importlib.util.cache_from_source(str(path)))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A repository with a package, compiled and listed as at image build."""
    root = tmp_path / "testbed"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / ".git" / "info").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "mod.py").write_text(SOURCE)
    (root / "pkg" / "sub" / "__init__.py").write_text("X = 1\n")
    (root / "pkg" / "broken.py").write_text("def (:\n")  # no Python: left to the import
    compiled, failed = tool.compile_missing([str(root)], skip_tests_in=[])
    assert (compiled, failed) == (3, 1)
    tool.write_manifest(str(tmp_path / "manifest.json"), tool.manifest(str(root)))
    return root


def _files(tree: Path) -> dict[str, str]:
    return tool.load_manifest(str(tree.parent / "manifest.json"))


def _sweep(tree: Path) -> tuple[int, int]:
    return tool.sweep(str(tree), _files(tree))


def _import_answer(tree: Path, never_check: bool = False) -> str:
    """What ``pkg.mod.answer()`` returns in a fresh interpreter (hash checks off when asked:
    what code in the test process could do)."""
    code = (
        "import _imp; _imp.check_hash_based_pycs = 'never'\n" if never_check else ""
    ) + "import pkg.mod; print(pkg.mod.answer(), pkg.mod.__cached__)"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.split()[0]


def test_compile_writes_checked_hash_pycs_once(tree: Path) -> None:
    pyc = _pyc(tree / "pkg" / "mod.py")
    head = pyc.read_bytes()[:16]
    assert int.from_bytes(head[4:8], "little") == tool.CHECKED_HASH_FLAGS
    assert tool.is_fresh(str(tree / "pkg" / "mod.py"), str(pyc))
    assert tool.compile_missing([str(tree)], skip_tests_in=[]) == (0, 1)  # all fresh already
    (tree / "pkg" / "mod.py").write_text(PATCHED)
    assert not tool.is_fresh(str(tree / "pkg" / "mod.py"), str(pyc))
    assert tool.compile_missing([str(tree)], skip_tests_in=[]) == (1, 1)


def test_compile_skips_the_test_directories_of_installed_packages(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    (site / "lib" / "tests").mkdir(parents=True)
    (site / "lib" / "__init__.py").write_text("")
    (site / "lib" / "tests" / "test_lib.py").write_text("")
    assert tool.compile_missing([str(site)], skip_tests_in=[str(site)], workers=2) == (1, 0)
    assert not _pyc(site / "lib" / "tests" / "test_lib.py").exists()


def test_the_repository_s_test_modules_are_not_compiled(tmp_path: Path) -> None:
    """Test modules and conftest files of the repository: their image pycs are never read
    (the tests a grading runs are in the files its test patch changes, which leaves their
    pycs stale; pytest compiles what it collects itself), so the image holds none; helpers
    in test directories and the package's own modules are compiled."""
    root = tmp_path / "testbed"
    (root / "pkg" / "tests").mkdir(parents=True)
    names = [
        "pkg/__init__.py", "pkg/tests/__init__.py", "pkg/tests/helpers.py",
        "pkg/tests/test_a.py", "pkg/tests/b_test.py", "conftest.py", "pkg/testing.py",
    ]  # fmt: skip
    for name in names:
        (root / name).write_text("X = 1\n")
    assert tool.compile_missing([str(root)], [], skip_test_modules_in=[str(root)]) == (4, 0)
    compiled = sorted(n for n in names if _pyc(root / n).exists())
    assert compiled == ["pkg/__init__.py", "pkg/testing.py", "pkg/tests/__init__.py",
                        "pkg/tests/helpers.py"]  # fmt: skip
    assert tool.compile_missing([str(root)], []) == (3, 0)  # roots not so marked: all of them


def test_manifest_lists_fresh_bytecode_and_drops_the_rest(tree: Path) -> None:
    files = _files(tree)
    assert sorted(files) == [
        "pkg/__pycache__/" + _pyc(tree / "pkg" / n).name for n in ("__init__.py", "mod.py")
    ] + ["pkg/sub/__pycache__/" + _pyc(tree / "pkg" / "sub" / "__init__.py").name]
    # a later checkout changed one file and removed another: the manifest step drops both
    (tree / "pkg" / "mod.py").write_text(PATCHED)
    (tree / "pkg" / "sub" / "__init__.py").unlink()
    files = tool.manifest(str(tree))
    assert list(files) == ["pkg/__pycache__/" + _pyc(tree / "pkg" / "__init__.py").name]
    assert not _pyc(tree / "pkg" / "mod.py").exists()


def test_manifest_is_this_pythons_only(tree: Path) -> None:
    path = tree.parent / "manifest.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "magic": "00000000"}))
    assert tool.load_manifest(str(path)) == {}
    path.write_text("not json")
    assert tool.load_manifest(str(path)) == {}


def test_unchanged_tree_keeps_its_bytecode_and_imports_it(tree: Path) -> None:
    os.utime(tree / "pkg" / "mod.py", (1, 1))  # times mean nothing to a hash-based pyc
    assert _sweep(tree) == (3, 0)
    code = "import pkg.mod, sys; print(pkg.mod.__spec__.loader.get_code('pkg.mod') is not None)"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    assert _import_answer(tree) == "1"


def _patched_source(tree: Path) -> None:
    """The patch changes the source: its image pyc is stale."""
    (tree / "pkg" / "mod.py").write_text(PATCHED)


def _patched_source_same_size_old_time(tree: Path) -> None:
    """Timestamp trick: same size, the old time back (a timestamp pyc would be believed)."""
    path = tree / "pkg" / "mod.py"
    before = path.stat()
    path.write_text(PATCHED)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _forged_at_listed_path(tree: Path) -> None:
    """The image's pyc rewritten: the header kept (the source hash matches), code changed."""
    pyc = _pyc(tree / "pkg" / "mod.py")
    header = pyc.read_bytes()[:16]
    fake = tree.parent / "fake.py"
    fake.write_text(PATCHED)
    py_compile.compile(str(fake), cfile=str(fake) + "c", dfile=str(tree / "pkg" / "mod.py"))
    pyc.write_bytes(header + Path(str(fake) + "c").read_bytes()[16:])


def _unchecked_pyc_at_listed_path(tree: Path) -> None:
    """An unchecked hash-based pyc (never compared with its source) of the patched code."""
    source = tree.parent / "fix.py"
    source.write_text(PATCHED)
    py_compile.compile(
        str(source),
        cfile=str(_pyc(tree / "pkg" / "mod.py")),
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )


def _planted_unlisted(tree: Path) -> None:
    """A new module's pyc in a __pycache__, beside its source (not in the manifest)."""
    (tree / "pkg" / "extra.py").write_text(SOURCE)
    py_compile.compile(
        str(tree / "pkg" / "extra.py"),
        invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
    )


def _sourceless(tree: Path) -> None:
    """A sourceless module beside the package (Python loads ``name.pyc`` without source)."""
    source = tree.parent / "evil.py"
    source.write_text(PATCHED)
    py_compile.compile(str(source), cfile=str(tree / "pkg" / "evil.pyc"))


def _symlinked_cache(tree: Path) -> None:
    """``__pycache__`` replaced by a link to a directory of the participant's bytecode."""
    elsewhere = tree.parent / "elsewhere"
    elsewhere.mkdir()
    cache = tree / "pkg" / "sub" / "__pycache__"
    for pyc in cache.iterdir():
        (elsewhere / pyc.name).write_bytes(pyc.read_bytes())
        pyc.unlink()
    cache.rmdir()
    cache.symlink_to(elsewhere, target_is_directory=True)


def _symlinked_pyc(tree: Path) -> None:
    """A listed pyc replaced by a link to an identical copy elsewhere."""
    pyc = _pyc(tree / "pkg" / "mod.py")
    copy = tree.parent / "copy.pyc"
    copy.write_bytes(pyc.read_bytes())
    pyc.unlink()
    pyc.symlink_to(copy)


def _moved_cache(tree: Path) -> None:
    """A listed pyc copied to another module's name (right bytes, wrong path)."""
    (tree / "pkg" / "other.py").write_text(SOURCE)
    pyc = _pyc(tree / "pkg" / "mod.py")
    _pyc(tree / "pkg" / "other.py").write_bytes(pyc.read_bytes())


def _timestamp_pyc_matching_the_source(tree: Path) -> None:
    """A timestamp pyc of the fix, its recorded time and size those of the unchanged source
    (what Python checks of a timestamp pyc), at the image's path."""
    source = tree / "pkg" / "mod.py"
    fix = tree.parent / "fix.py"
    fix.write_text(PATCHED.replace("return 2", "return 3"))  # the same size as SOURCE
    info = source.stat()
    os.utime(fix, ns=(info.st_atime_ns, info.st_mtime_ns))
    py_compile.compile(str(fix), cfile=str(_pyc(source)))


def _pytest_rewrite_cache(tree: Path) -> None:
    """pytest's own assertion-rewrite cache name beside the image's pyc (pytest checks only
    the source's time and size)."""
    pyc = _pyc(tree / "pkg" / "mod.py")
    rewritten = pyc.with_name(pyc.name.replace(".pyc", "-pytest-8.3.3.pyc"))
    rewritten.write_bytes(pyc.read_bytes())


def _other_python_and_optimised(tree: Path) -> None:
    """Bytecode for another Python and an optimised one (``-O``): never listed."""
    pyc = _pyc(tree / "pkg" / "mod.py")
    pyc.with_name("mod.cpython-27.pyc").write_bytes(pyc.read_bytes())
    pyc.with_name(pyc.name.replace(".pyc", ".opt-1.pyc")).write_bytes(pyc.read_bytes())


def _source_deleted(tree: Path) -> None:
    """The patch deletes a module: its listed pyc is an orphan."""
    (tree / "pkg" / "sub" / "__init__.py").unlink()


def _source_linked_to_a_device(tree: Path) -> None:
    """The source replaced by a link to an endless device: the sweep must not read it."""
    source = tree / "pkg" / "mod.py"
    source.unlink()
    source.symlink_to("/dev/zero")


def _pycache_is_a_file(tree: Path) -> None:
    """``__pycache__`` replaced by a file (no directory, nothing Python loads; it goes)."""
    cache = tree / "pkg" / "sub" / "__pycache__"
    for pyc in cache.iterdir():
        pyc.unlink()
    cache.rmdir()
    cache.write_bytes(b"\0")


ATTACKS: list[tuple[Callable[[Path], None], str, str]] = [
    # (what is done, the path that must be gone, what pkg.mod.answer() returns then)
    (_patched_source, "pkg/mod.py", "2"),
    (_patched_source_same_size_old_time, "pkg/mod.py", "2"),
    (_forged_at_listed_path, "pkg/mod.py", "1"),
    (_unchecked_pyc_at_listed_path, "pkg/mod.py", "1"),
    (_planted_unlisted, "pkg/extra.py", "1"),
    (_sourceless, "pkg/evil.pyc", "1"),
    (_symlinked_cache, "pkg/sub/__pycache__", "1"),
    (_symlinked_pyc, "pkg/mod.py", "1"),
    (_moved_cache, "pkg/other.py", "1"),
    (_timestamp_pyc_matching_the_source, "pkg/mod.py", "1"),
    (_pytest_rewrite_cache, f"pkg/__pycache__/mod.{TAG}-pytest-8.3.3.pyc", "1"),
    (_other_python_and_optimised, "pkg/__pycache__/mod.cpython-27.pyc", "1"),
    (_source_deleted, "pkg/sub/__init__.py", "1"),
    (_source_linked_to_a_device, "pkg/mod.py", ""),
    (_pycache_is_a_file, "pkg/sub/__pycache__", "1"),
]


def _gone(tree: Path, rel: str) -> Path:
    path = tree / rel
    return _pyc(path) if rel.endswith(".py") else path


def test_a_source_keeping_the_pycs_64_bit_hash_does_not_keep_the_pyc(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pyc's own source hash is SipHash under a public key: a patched source made to
    keep it (stood in for here by a source_hash answering the recorded one for it) fools
    the pyc's freshness check, not the manifest's SHA-256 of the source."""
    mod = tree / "pkg" / "mod.py"
    pyc = _pyc(mod)
    recorded = pyc.read_bytes()[8:16]
    real = importlib.util.source_hash

    def colliding(data: bytes) -> bytes:
        return recorded if data == PATCHED.encode() else real(data)

    monkeypatch.setattr(tool.importlib.util, "source_hash", colliding)
    mod.write_text(PATCHED)
    assert tool.is_fresh(str(mod), str(pyc))
    assert _sweep(tree) == (2, 1)
    assert not pyc.exists()


@pytest.mark.parametrize(
    "attack, gone, answer", ATTACKS, ids=[a[0].__name__.strip("_") for a in ATTACKS]
)
def test_sweep_removes_what_is_not_the_images_fresh_bytecode(
    tree: Path, attack: Callable[[Path], None], gone: str, answer: str
) -> None:
    attack(tree)
    kept, removed = _sweep(tree)
    assert removed >= 1 and not os.path.lexists(_gone(tree, gone))
    if answer:  # (none when the source is no file to import)
        # nothing stale is left for code in the test process that turns hash checks off
        assert _import_answer(tree, never_check=True) == answer
        assert _import_answer(tree) == answer


def _run_sweep_lines(tree: Path, manifest: Path) -> subprocess.CompletedProcess[str]:
    script = "\n".join(sweep_lines(str(tree))).replace(MANIFEST, str(manifest))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)


def test_the_eval_scripts_sweep_runs_the_tool(tree: Path) -> None:
    _planted_unlisted(tree)
    _patched_source(tree)
    done = _run_sweep_lines(tree, tree.parent / "manifest.json")
    assert done.returncode == 0, done.stderr
    assert "bytecode: 2 kept (the image's, fresh), 2 removed" in done.stdout
    assert _pyc(tree / "pkg" / "__init__.py").exists()


def test_without_a_manifest_the_sweep_removes_all_bytecode(tree: Path) -> None:
    done = _run_sweep_lines(tree, tree.parent / "absent.json")
    assert done.returncode == 0, done.stderr
    assert not list(tree.rglob("*.pyc"))


def test_when_the_tool_cannot_run_all_bytecode_goes(tree: Path) -> None:
    script = "\n".join(sweep_lines(str(tree))).replace(MANIFEST, str(tree.parent / "m.json"))
    # no python on PATH: the fallback removes every pyc and __pycache__
    done = subprocess.run(["bash", "-c", script], env={"PATH": "/usr/bin:/bin"}, text=True)
    assert done.returncode == 0
    assert not list(tree.rglob("*.pyc")) and not list(tree.rglob("__pycache__"))


def test_bytecode_is_ignored_by_git(tree: Path) -> None:
    exclude = tree / ".git" / "info" / "exclude"
    exclude.write_text("build/")  # no newline at the end
    tool.ignore_bytecode(str(tree))
    tool.ignore_bytecode(str(tree))
    assert exclude.read_text().splitlines() == ["build/", "__pycache__/", "*.py[co]"]


def test_grading_in_the_participants_container_drops_the_manifest() -> None:
    assert drop_manifest_command() == f"rm -f {MANIFEST}"


# ---------------------------------------------------------------------------- in containers
ACTIVATE = "source /opt/swe/activate.sh && cd /testbed && "
CALC_PYC = "import importlib.util; print(importlib.util.cache_from_source('calc/__init__.py'))"
# the gold fix's code under a header that records the unchanged source's hash: a checked
# hash-based pyc that Python believes
FORGE = (
    ACTIVATE + "python - <<'EOF'\n"
    "import importlib.util, pathlib, py_compile\n"
    "pathlib.Path('/tmp/fix.py').write_text({fix!r})\n"
    "py_compile.compile('/tmp/fix.py', cfile='/tmp/fix.pyc',\n"
    "    invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)\n"
    "data = bytearray(pathlib.Path('/tmp/fix.pyc').read_bytes())\n"
    "data[8:16] = importlib.util.source_hash(pathlib.Path('calc/__init__.py').read_bytes())\n"
    "pathlib.Path(importlib.util.cache_from_source('calc/__init__.py')).write_bytes(data)\n"
    "EOF\n"
    "python -c 'import calc; print(\"floordiv\", calc.floordiv(-7, 2))'"
)


@pytest.fixture(scope="module")
def calc(env_settings, docker_backend, synthetic_instances, synthetic_dir, tmp_path_factory):
    """The synthetic calc instance, its recipe and its image (phases 1-4, bytecode on)."""
    assert env_settings.environment.compile_bytecode  # the default
    instance = synthetic_instances[CALC.instance_id]
    ctx = RunContext(
        env_settings, docker_backend, TEST_RUN_ID, RunDir(tmp_path_factory.mktemp("bytecode"))
    )
    recipes = json.loads((synthetic_dir / "recipes.json").read_text())
    recipe = next(Recipe.model_validate(r) for r in recipes if r["repo"] == instance.repo)
    return instance, recipe, prepare_instance(ctx, instance).instance_image


def _sh(sandbox: Sandbox, command: str) -> str:
    result = sandbox.exec(["bash", "-c", command], timeout=120)
    assert result.ok, result.output
    return result.stdout


@pytest.mark.container
def test_the_image_holds_listed_fresh_bytecode_that_git_ignores(make_sandbox, calc) -> None:
    sandbox = make_sandbox(calc[2])
    listed = json.loads(_sh(sandbox, f"cat {MANIFEST}"))["files"]
    assert _sh(sandbox, ACTIVATE + f'python -c "{CALC_PYC}"').strip() in listed
    # checked hash-based (flags 3), in the repository and in site-packages (pytest's)
    flags = _sh(
        sandbox,
        ACTIVATE + "python - <<'EOF'\nimport _pytest, calc\nfor m in (calc, _pytest):\n"
        "    print(int.from_bytes(open(m.__cached__, 'rb').read()[4:8], 'little'))\nEOF",
    )
    assert flags.split() == ["3", "3"]
    assert _sh(sandbox, "cd /testbed && git status --porcelain") == ""
    assert _sh(sandbox, f"stat -c %U:%a {MANIFEST}").strip() == "root:644"


@pytest.mark.container
def test_the_eval_script_keeps_the_images_fresh_bytecode(make_sandbox, calc) -> None:
    instance, recipe, image = calc
    sandbox = make_sandbox(image)
    pyc = _sh(sandbox, ACTIVATE + f'python -c "{CALC_PYC}"').strip()
    before = _sh(sandbox, f"sha256sum /testbed/{pyc}")
    run = run_tests(sandbox, instance, recipe, timeout=300, test_user=TEST_USER)
    assert run.crash is None, run.crash
    assert re.search(r"bytecode: [1-9]\d* kept \(the image's, fresh\)", run.output), run.output
    assert _sh(sandbox, f"sha256sum /testbed/{pyc}") == before


@pytest.mark.container
def test_a_forged_pyc_works_until_the_eval_script_removes_it(make_sandbox, calc) -> None:
    """The forgery takes effect in the container (the control); the eval script removes it
    and the FAIL_TO_PASS tests fail, as the unchanged source does."""
    instance, recipe, image = calc
    sandbox = make_sandbox(image)
    control = _sh(sandbox, FORGE.format(fix=CALC.fix_src["calc/__init__.py"]))
    assert control.strip().endswith("floordiv -4"), control  # the fix's answer, forged
    run = run_tests(sandbox, instance, recipe, timeout=300, test_user=TEST_USER)
    assert run.crash is None, run.crash
    assert {n: run.outcomes.get(n) for n in instance.FAIL_TO_PASS} == {
        n: TS.FAILED for n in instance.FAIL_TO_PASS
    }
    assert re.search(r"bytecode: \d+ kept \(the image's, fresh\), [1-9]\d* removed", run.output)
