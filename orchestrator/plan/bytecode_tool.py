"""Bytecode built with the image, checked before the tests: the program that runs *inside* the
containers, with the environment's Python (standard library only, Python >= 3.7: PEP 552
hash-based pycs). :mod:`.bytecode` sends it there; the tests import it on the host.

``compile``  (image build, as root): a checked hash-based ``.pyc`` for every ``.py`` under
             the roots that lacks a fresh one (site-packages without its test directories,
             and the repository without its test modules): nothing is compiled twice, a
             stale one is replaced.
``manifest`` (image build, after the last change to the repository): the repository's
             bytecode that is fresh, by path with its SHA-256 and its source's, in a
             root-owned file; stale
             and orphaned bytecode is removed first.
``sweep``    (eval script, as root, after the patches and before the tests): every ``.pyc``
             or ``.pyo`` and every ``__pycache__`` of the repository goes unless it is a
             regular file in a real ``__pycache__`` directory, listed in the manifest with
             the same SHA-256 (its source's too), and fresh: a checked hash-based pyc whose
             recorded source hash is that of the source beside it now. What is left is the
             image's own compilation of the very source the tests will import, so nothing a
             patch or a participant wrote is loaded, and no stale bytecode is either, even if
             code in the test process turns hash checking off (``_imp.check_hash_based_pycs``).

Exit status 0, one summary line; a failure of ``sweep`` (exit 1) leaves the caller to
remove all bytecode.
"""

import hashlib
import importlib.util
import json
import os
import py_compile
import stat
import sys

# PEP 552 flags: hash-based (bit 0), check the source (bit 1)
CHECKED_HASH_FLAGS = 0b11
BYTECODE_SUFFIXES = (".pyc", ".pyo")
# directories of installed packages whose modules the tests of a project do not import
SKIPPED_IN_PACKAGES = ("tests", "test")


def is_test_module(name):
    """A test module or conftest file of the repository: its image pyc is never read. The
    tests a grading runs are in the files its test patch changes, so their pycs are stale
    there (the sweep removes them); pytest compiles the test modules it collects and conftest
    files itself (assertion rewriting, its own cache) anyway."""
    return name == "conftest.py" or (
        name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))
    )


def _sources(root, skip_tests, skip_test_modules=False):
    """The ``.py`` regular files under ``root`` (not ``.git``, not through symbolic links);
    with ``skip_test_modules``, not the test modules either (:func:`is_test_module`)."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in (".git", "__pycache__") and not (skip_tests and d in SKIPPED_IN_PACKAGES)
        )
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if skip_test_modules and is_test_module(name):
                continue
            if name.endswith(".py") and stat.S_ISREG(os.lstat(path).st_mode):
                yield path


def _header(pyc):
    try:
        with open(pyc, "rb") as fh:
            return fh.read(16)
    except OSError:
        return b""


def is_fresh(source, pyc, data=None):
    """``pyc`` is a checked hash-based pyc of this Python for ``source`` as it is now."""
    head = (data or _header(pyc))[:16]
    if len(head) < 16 or head[:4] != importlib.util.MAGIC_NUMBER:
        return False
    if int.from_bytes(head[4:8], "little") != CHECKED_HASH_FLAGS:
        return False
    try:
        # a regular file (a link to one counts): a link to /dev/zero or a FIFO is never read
        if not stat.S_ISREG(os.stat(source).st_mode):
            return False
        with open(source, "rb") as fh:
            return head[8:16] == importlib.util.source_hash(fh.read())
    except OSError:
        return False


def _compile(source):
    """Compile one source; False when it is no Python this interpreter compiles."""
    try:
        py_compile.compile(
            source,
            cfile=importlib.util.cache_from_source(source),
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
        )
        return True
    except (py_compile.PyCompileError, OSError, ValueError, SyntaxError):
        return False  # left to the import, as without bytecode


def compile_missing(roots, skip_tests_in, workers=1, skip_test_modules_in=()):
    """Compile every source under ``roots`` without a fresh pyc; (compiled, failed). Under
    ``skip_test_modules_in``, not the test modules (:func:`is_test_module`)."""
    todo = [
        source
        for root in roots
        for source in _sources(root, root in skip_tests_in, root in skip_test_modules_in)
        if not is_fresh(source, importlib.util.cache_from_source(source))
    ]
    if workers > 1 and len(todo) > 100:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers) as pool:
            done = list(pool.map(_compile, todo, chunksize=64))
    else:
        done = [_compile(source) for source in todo]
    return done.count(True), done.count(False)


def _bytecode_paths(root):
    """Every path under ``root`` (not ``.git``) named like bytecode or ``__pycache__``, with
    whether it is a directory; symbolic links are not followed."""
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath == root:
            dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in dirnames + filenames:
            if name == "__pycache__" or name.endswith(BYTECODE_SUFFIXES):
                yield os.path.join(dirpath, name)


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


def _verified(path, root, files):
    """The bytes of ``path`` when it is kept: listed, the same, fresh; else None."""
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode) or not path.endswith(".pyc"):
        return None
    folder = os.path.dirname(path)
    if os.path.basename(folder) != "__pycache__" or not stat.S_ISDIR(os.lstat(folder).st_mode):
        return None
    expected = files.get(os.path.relpath(path, root))
    if expected is None:
        return None
    with open(path, "rb") as fh:
        data = fh.read()
    if _entry(path, data) != expected:
        return None
    try:
        source = importlib.util.source_from_cache(path)
    except (ValueError, NotImplementedError):
        return None
    return data if is_fresh(source, path, data) else None


def _entry(pyc, data):
    """A manifest entry: the SHA-256 of the pyc and of its source (the pyc's own 64-bit
    source hash is SipHash under a public key: a patched source made to keep it must still
    not keep the image's bytecode); None without a regular source file."""
    try:
        source = importlib.util.source_from_cache(pyc)
        if not stat.S_ISREG(os.stat(source).st_mode):
            return None
        with open(source, "rb") as fh:
            return f"{_sha256(data)}:{_sha256(fh.read())}"
    except (OSError, ValueError, NotImplementedError):
        return None


def sweep(root, files):
    """Remove the bytecode under ``root`` that is not the listed, unchanged, fresh kind;
    (kept, removed)."""
    kept = removed = 0
    for path in sorted(_bytecode_paths(root), key=len, reverse=True):
        if not os.path.lexists(path):
            continue
        info = os.lstat(path)
        if stat.S_ISDIR(info.st_mode):
            if os.path.basename(path) == "__pycache__" and not os.listdir(path):
                os.rmdir(path)  # an empty cache directory: nothing to keep in it
            continue  # a directory named like bytecode is no module Python loads
        if _verified(path, root, files) is not None:
            kept += 1
        else:
            os.unlink(path)  # a file, or a symbolic link (never followed)
            removed += 1
    return kept, removed


def manifest(root):
    """The fresh bytecode of ``root`` by relative path with its SHA-256; what is stale,
    orphaned or not in a ``__pycache__`` is removed first."""
    sweep_all = {}
    for path in _bytecode_paths(root):
        if not os.path.lexists(path) or not path.endswith(".pyc"):
            continue
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode):
            continue
        with open(path, "rb") as fh:
            data = fh.read()
        entry = _entry(path, data)
        if entry is not None:
            sweep_all[os.path.relpath(path, root)] = entry
    # the same test as the eval script's, on everything: what fails it would go there too
    sweep(root, sweep_all)
    return {rel: sha for rel, sha in sweep_all.items() if os.path.exists(os.path.join(root, rel))}


def load_manifest(path):
    """The listed files, when the manifest is this Python's; else none."""
    try:
        with open(path) as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("magic") != importlib.util.MAGIC_NUMBER.hex():
        return {}
    files = data.get("files")
    return files if isinstance(files, dict) else {}


def write_manifest(path, files):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump({"magic": importlib.util.MAGIC_NUMBER.hex(), "files": files}, fh)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def ignore_bytecode(tree):
    """The image's bytecode is no change of the participant's (``git status``, its diff)."""
    exclude = os.path.join(tree, ".git", "info", "exclude")
    if not os.path.isdir(os.path.join(tree, ".git")):
        return
    os.makedirs(os.path.dirname(exclude), exist_ok=True)
    try:
        with open(exclude) as fh:
            lines = fh.read().splitlines()
    except OSError:
        lines = []
    missing = [p for p in ("__pycache__/", "*.py[co]") if p not in lines]
    if missing:
        with open(exclude, "a") as fh:
            if os.path.getsize(exclude):
                fh.write("\n")  # harmless after a newline, needed after none
            fh.write("".join(p + "\n" for p in missing))


def _site_packages():
    """The environment's package directories (its venv's, with ``site`` on)."""
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    candidates = [paths.get("purelib"), paths.get("platlib")]
    candidates += getattr(site, "getsitepackages", lambda: [])()
    found = []
    for path in candidates:
        if path and os.path.isdir(path) and os.path.realpath(path) not in found:
            found.append(os.path.realpath(path))
    return found


def main(argv):
    command, tree, manifest_path = argv[1], argv[2], argv[3]
    if command == "compile":
        site = _site_packages()
        workers = os.cpu_count() or 1
        compiled, failed = compile_missing(
            site + [tree], skip_tests_in=site, workers=workers, skip_test_modules_in=[tree]
        )
        print(f"bytecode: {compiled} compiled, {failed} not compilable")
    elif command == "manifest":
        files = manifest(tree)
        write_manifest(manifest_path, files)
        ignore_bytecode(tree)
        print(f"bytecode: {len(files)} fresh files of the repository listed")
    elif command == "sweep":
        kept, removed = sweep(tree, load_manifest(manifest_path))
        print(f"bytecode: {kept} kept (the image's, fresh), {removed} removed")
    else:
        print(f"unknown command {command!r}")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
