"""An environment inferred from a repository's own files at one commit (pure functions of
:class:`~.repo_files.RepoFiles`-like readers): the Python, the install command, the test
extras and requirements, the build needs, the test runner and its log format, as a
:class:`~orchestrator.recipes.recipe.Recipe` that the recipe machinery builds.

Dependencies are resolved as they were on the commit's date: the install runs
``uv pip install --exclude-newer <commit time>`` (PyPI serves every file's upload time,
PEP 700; uv treats a file whose index does not, e.g. a plain file mirror, as unavailable
under a cut-off: the dated tries fail and the last, without a cut-off, installs today's
versions). Where the commit is
older than the chosen Python, packages of its day may have no wheel for it and no longer
build on it: the install then tries again as of the date that Python had been out half a
year, and last without a cut-off. The build tools (setuptools, wheel) and the test runner
(pytest and its own dependencies) are exempt up to the oldest release that runs on the
chosen Python.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from typing import Protocol

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from pydantic import BaseModel

from orchestrator.plan.env_plan import InferredPlan
from orchestrator.plan.pins import SETUPTOOLS_CAP, newer_setuptools
from orchestrator.recipes.recipe import Recipe, Service
from orchestrator.setup.infer.packaging_files import (
    Packaging,
    ci_pythons,
    read_environment_yml,
    read_noxfile,
    read_pyproject,
    read_setup_cfg,
    read_setup_py,
    read_tox_ini,
    requirement_name,
    requirements_file,
)
from orchestrator.setup.infer.system_packages import install_lines, system_packages
from sandbox_tools.contract import SERVICES_DIR

# Bump when the inference changes what it infers: part of an inferred environment's key.
INFER_VERSION = 9

PYTHON_RELEASES = {
    "3.6": date(2016, 12, 23), "3.7": date(2018, 6, 27), "3.8": date(2019, 10, 14),
    "3.9": date(2020, 10, 5), "3.10": date(2021, 10, 4), "3.11": date(2022, 10, 24),
    "3.12": date(2023, 10, 2), "3.13": date(2024, 10, 7), "3.14": date(2025, 10, 7),
}  # fmt: skip
# the oldest pytest that runs on each Python, and when it was released
RUNNER_FLOORS = {
    "3.8": ("5.0.0", date(2019, 6, 28)), "3.9": ("6.2.0", date(2020, 12, 12)),
    "3.10": ("6.2.5", date(2021, 8, 29)), "3.11": ("7.2.0", date(2022, 10, 23)),
    "3.12": ("7.4.0", date(2023, 6, 23)), "3.13": ("8.2.0", date(2024, 4, 27)),
    "3.14": ("8.4.0", date(2025, 6, 2)),
}  # fmt: skip
# pytest and its own dependencies: the installed runner brings them (a project's pins of
# them were made for the pytest of its day)
RUNNER_PACKAGES = ("pytest", "pluggy", "iniconfig", "exceptiongroup", "tomli", "py")
# the build tools' cut-off: setuptools 75.1.0, the newest the build constraints allow
BUILD_TOOLS_DATE = date(2024, 9, 30)
# the oldest build tools that make editable installs (setuptools 64.0.0, PEP 660) and run on
# the Python, released: a commit older gets them plus three months of fixes, no later ones
# (a later setuptools drops modules old setup scripts import, e.g. setuptools.dep_util)
BUILD_TOOL_FLOORS = {
    "3.9": date(2022, 8, 11), "3.10": date(2022, 8, 11), "3.11": date(2022, 8, 11),
    "3.12": date(2023, 6, 19), "3.13": date(2024, 5, 21), "3.14": date(2025, 6, 2),
}  # fmt: skip
# what a build without isolation runs on besides its own requirements: a setuptools that
# makes editable installs (PEP 660), as of the build tools' cut-off (the environment's own
# may be older), no newer than the build constraints allow (uv reads no PIP_CONSTRAINT for
# what it installs: without a cut-off it would take the newest)
EDITABLE_BUILD_TOOLS = [f"setuptools>=64,<={SETUPTOOLS_CAP}", "wheel"]
# a Python's first half year: packages of that age have wheels for it
PYTHON_SETTLED = timedelta(days=183)

# what sympy's own runner is told to keep quiet about (old sources on a newer Python)
SYMPY_WARNINGS = "ignore::UserWarning,ignore::SyntaxWarning"
TEST_EXTRAS = ("test", "tests", "testing")
DEV_EXTRAS = ("dev", "develop", "development")
# test and dev requirements that no test needs (linters, coverage upload, docs, release)
NOT_FOR_TESTS = re.compile(
    r"^(coverage|pytest-cov|codecov|coveralls|python-coveralls|tox|nox|pre-commit|flake8.*|pyflakes|"
    r"pycodestyle|pep8|black|isort|mypy|ruff|pylint|twine|wheel|setuptools|pip|pip-tools|"
    r"check-manifest|sphinx.*|readme-renderer|bump2?version|ipython|ipdb|jupyter.*|types-.*|"
    r"towncrier|docutils|restructuredtext-lint|pyroma|zest-releaser|invoke|fabric|paver|"
    r"pip-compile-multi|build|virtualenv|tbump|contributors-txt|bandit)$"
)
# setup.py's imports -> the distribution that provides them
MODULE_DISTRIBUTIONS = {
    "Cython": "cython", "numpy": "numpy", "pybind11": "pybind11", "cffi": "cffi",
    "setuptools_scm": "setuptools-scm", "extension_helpers": "extension-helpers",
    "pkgconfig": "pkgconfig", "yaml": "pyyaml", "skbuild": "scikit-build", "six": "six",
    "toml": "toml", "packaging": "packaging", "setuptools_rust": "setuptools-rust",
}  # fmt: skip
REQUIREMENT_FILE = re.compile(
    r"^(?:[^/]+/){0,2}[^/]*(?:requirement|reqs)[^/]*(?:/[^/]+)?\.txt$|"
    r"^(?:tests?|ci)/(?:[^/]+/)?requirements[^/]*\.txt$"
)
WORKFLOWS = re.compile(r"^(\.github/workflows/[^/]+\.ya?ml|\.travis\.yml|azure-pipelines\.yml)$")


class Files(Protocol):
    """What the inference reads: a commit's paths, text and time."""

    commit: str
    commit_time: datetime

    @property
    def paths(self) -> list[str]: ...

    def exists(self, path: str) -> bool: ...

    def read(self, path: str) -> str | None: ...


def read_packaging(files: Files) -> Packaging:
    """Every packaging fact the repository's files give (see :mod:`.packaging_files`)."""
    facts = Packaging()
    if (text := files.read("pyproject.toml")) is not None:
        read_pyproject(text, facts)
    if (text := files.read("setup.cfg")) is not None:
        read_setup_cfg(text, facts)
    if (text := files.read("setup.py")) is not None:
        read_setup_py(text, facts, own_modules(files.paths))
    if (text := files.read("pytest.ini")) is not None:
        facts.pytest_configured = True
        facts.sources.append("pytest.ini")
        match = re.search(r"^addopts\s*=\s*(.*)$", text, re.MULTILINE)
        facts.pytest_addopts = facts.pytest_addopts or (match.group(1) if match else "")
    for path in files.paths:
        if WORKFLOWS.match(path) and (text := files.read(path)) is not None:
            found = ci_pythons(text)
            if found:
                facts.declared_pythons += found
                facts.sources.append(path)
    return facts


def own_modules(paths: Iterable[str]) -> set[str]:
    """The repository's top-level modules and packages (a setup.py importing them imports
    its own code, not a build requirement)."""
    found: set[str] = set()
    for path in paths:
        parts = path.split("/")
        if parts[0] == "src" and len(parts) > 2:
            parts = parts[1:]
        if len(parts) == 1 and path.endswith(".py"):
            found.add(parts[0].removesuffix(".py"))
        elif len(parts) > 1:
            found.add(parts[0])
    return found


def infer_plan(
    files: Files, repo: str, version: str, available: list[str], test_names: list[str] | None = None
) -> InferredPlan:
    """The environment of ``repo`` at ``files.commit``, on one of the ``available`` Pythons
    (those that print ``test_names`` as they are written, when they name unittest tests)."""
    facts = read_packaging(files)
    reasons: list[str] = []
    available, style_why = pythons_printing(test_names or [], available)
    if style_why:
        reasons.append(style_why)
    listed: dict[str, list[str]] = {}  # test requirements by the file that lists them
    if (text := files.read("tox.ini")) is not None:
        listed["tox.ini [testenv] deps"] = read_tox_ini(text, facts, files.read)
    if (text := files.read("noxfile.py")) is not None:
        listed["noxfile.py installs"] = read_noxfile(text, facts)
    for name in ("environment.yml", "environment.yaml", "ci/environment.yml"):
        if (text := files.read(name)) is not None:
            listed[f"{name} pip list"] = read_environment_yml(text, facts)
            break
    python, python_why = choose_python(facts, files.commit_time, available)
    reasons.append(f"python {python}: {python_why}")
    runner = runner_of(files, facts)
    reasons.append(runner.why)
    extras, requirements, test_why = suite_requirements(files, facts, listed, runner)
    build_first, build_why = build_needs(files, facts)
    reasons += test_why + build_why
    if demanded := newer_setuptools(facts.build_requires):
        reasons.append(
            f"build constraints: {demanded}, as the build requirements demand, in place of the "
            f"default cap setuptools<={SETUPTOOLS_CAP}"
        )
    cutoffs = resolution_cutoffs(files.commit_time, python)
    reasons.append(
        "dependencies as of the commit's date (uv --exclude-newer), then "
        + ", then ".join(f"as of {c}" if c else "without a cut-off" for c in cutoffs[1:])
        + " when that fails"
    )
    target = "." + (f"[{','.join(extras)}]" if extras else "")
    own = requirement_name(facts.name) if facts.name else ""
    extra_reqs = [r for e in extras for r in facts.extras.get(e, []) if requirement_name(r) != own]
    runner_step, plugins = None, list[str]()
    if runner.name == "pytest" and own != "pytest":
        runner_step = runner_install(files.commit_time, python)
        reasons.append(
            f"test runner installed as {runner_step[0]} as of {runner_step[1]}: the oldest "
            f"pytest that runs on Python {python}, or the commit's"
        )
        if runner_step[1] != _stamp(files.commit_time):
            plugins = [r for r in requirements if requirement_name(r).startswith("pytest-")]
        if plugins:
            reasons.append(
                f"pytest plugins {', '.join(plugins)} upgraded with the test runner, as of its "
                "date: a plugin of the commit's day may not run on that pytest"
            )
    install = install_command(
        target, requirements, build_first, cutoffs, exempt_until(files.commit_time, python),
        facts.name, extra_reqs, runner_step, import_names(files, facts), plugins,
    )  # fmt: skip
    service = service_for(files)
    if service is not None:
        reasons.append(service.why)
    system = system_packages(files.paths, files.read)
    reasons += system.reasons
    recipe = Recipe(
        repo=repo,
        version=version,
        python=python,
        pre_install=install_lines(system),
        install=install,
        test_cmd=runner.test_cmd,
        log_format=runner.log_format,
        service_setup=service.setup if service else [],
        services=service.services if service else [],
        env=service.env if service else {},
        build_setuptools=demanded,
    )
    return InferredPlan(
        recipe=recipe,
        commit=files.commit,
        commit_time=files.commit_time,
        cutoffs=cutoffs,
        requirements=[target, *requirements],
        build_first=build_first,
        runner=f"{runner_step[0]} as of {runner_step[1]}" if runner_step else "",
        system_packages=system.packages,
        system_left_out=system.left_out,
        reasons=reasons,
        sources=list(dict.fromkeys(facts.sources + system.sources)),
        unread=list(dict.fromkeys(facts.unread)),
    )


# --------------------------------------------------------------------------- Python


def _minor(version: str) -> tuple[int, int]:
    major, minor = (re.findall(r"\d+", version) + ["0", "0"])[:2]
    return int(major), int(minor)


# unittest's verbose output names a test "test_x (pkg.Class.test_x)" from Python 3.11 on,
# "test_x (pkg.Class)" before: the names a task lists come from one or the other
UNITTEST_QUALIFIED_SINCE = (3, 11)
_UNITTEST_NAME = re.compile(r"^(\w+) \(([\w.]+)\)$")


def pythons_printing(names: list[str], available: list[str]) -> tuple[list[str], str]:
    """The ``available`` Pythons whose unittest prints the task's test ``names`` as they are
    written (all when they name no unittest test, or when none of them would), and why."""
    styles = set()
    for name in names:
        if match := _UNITTEST_NAME.match(name):
            test, where = match.groups()
            styles.add(where.endswith(f".{test}"))
    if len(styles) != 1:
        return available, ""
    qualified = styles.pop()
    fitting = [p for p in available if (_minor(p) >= UNITTEST_QUALIFIED_SINCE) == qualified]
    if not fitting or fitting == available:
        return available, ""
    since = ".".join(map(str, UNITTEST_QUALIFIED_SINCE))
    form = "(module.Class.test)" if qualified else "(module.Class)"
    side = f"{since} or later" if qualified else f"before {since}"
    return fitting, (
        f"Python {' or '.join(fitting)}: the task names its unittest tests {form}, as "
        f"unittest prints them on Python {side}"
    )


def choose_python(facts: Packaging, commit_time: datetime, available: list[str]) -> tuple[str, str]:
    """The available Python the project ran on at the commit, and why: the newest one its
    ``python_requires`` allows among the versions it declares (classifiers, tox envlist,
    CI matrix); else the nearest to the newest it declares; else the newest released half
    a year before the commit; else the oldest available."""
    ordered = sorted(available, key=_minor)
    allowed, requires = ordered, facts.python_requires.strip()
    if requires:
        try:
            spec = SpecifierSet(requires)
            allowed = [p for p in ordered if spec.contains(f"{p}.0", prereleases=True)] or ordered
        except InvalidSpecifier:
            requires = ""
    limit = f" (python_requires {requires!r})" if requires else ""
    declared = sorted(set(facts.declared_pythons), key=_minor)
    if declared:
        supported = [p for p in allowed if p in declared]
        if supported:
            return supported[-1], f"the newest available it declares ({', '.join(declared)}){limit}"
        newest = _minor(declared[-1])
        near = min(allowed, key=lambda p: (abs(_minor(p)[1] - newest[1]), _minor(p)))
        return near, f"the nearest available to the newest it declares ({declared[-1]}){limit}"
    day = commit_time.date()
    released = [
        p for p in allowed if p in PYTHON_RELEASES and PYTHON_RELEASES[p] + PYTHON_SETTLED <= day
    ]
    if released:
        return released[-1], f"the newest available released half a year before the commit{limit}"
    return allowed[0], f"the oldest available: none was released before the commit{limit}"


def resolution_cutoffs(commit_time: datetime, python: str) -> list[str]:
    """The ``--exclude-newer`` cut-offs tried in turn: the commit's time, the date the
    Python had been out half a year (when later), and none ("")."""
    cutoffs = [_stamp(commit_time)]
    settled = PYTHON_RELEASES.get(python)
    if settled is not None and settled + PYTHON_SETTLED > commit_time.date():
        cutoffs.append(_stamp(_day(settled + PYTHON_SETTLED)))
    return [*cutoffs, ""]


def exempt_until(commit_time: datetime, python: str) -> dict[str, str]:
    """Per-package cut-offs later than the commit's: the build tools, to the oldest release
    that makes editable installs on the Python plus three months of fixes (older ones do not
    run there), never past the newest the build constraints allow."""
    floor = BUILD_TOOL_FLOORS.get(python)
    until = BUILD_TOOLS_DATE if floor is None else floor + timedelta(days=90)
    until = min(until, BUILD_TOOLS_DATE)
    if until <= commit_time.date():
        return {}
    return dict.fromkeys(("setuptools", "wheel"), _stamp(_day(until)))


def runner_install(commit_time: datetime, python: str) -> tuple[str, str]:
    """pytest as the tests run it: at least the oldest release that runs on the Python, as
    of the commit's date or, when later, that release's plus three months of fixes (with
    its own dependencies of that date)."""
    floor = RUNNER_FLOORS.get(python)
    if floor is None:
        return "pytest", _stamp(commit_time)
    version, released = floor
    return f"pytest>={version}", _stamp(max(commit_time, _day(released + timedelta(days=90))))


def _day(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --------------------------------------------------------------------------- test runner


class Runner(BaseModel):
    test_cmd: str
    log_format: str
    why: str
    name: str = "pytest"


def runner_of(files: Files, facts: Packaging) -> Runner:
    """The repository's own test runner where it has one SWE-bench knows the output of
    (sympy's ``bin/test``, django's ``tests/runtests.py``), else pytest."""
    bin_test = files.read("bin/test") or ""
    if "sympy" in bin_test:
        return Runner(
            name="sympy",
            test_cmd=f"PYTHONWARNINGS={shlex.quote(SYMPY_WARNINGS)} bin/test -C --verbose",
            log_format="sympy",
            why="test runner: the repository's bin/test (sympy's runner)",
        )
    if "django" in (files.read("tests/runtests.py") or ""):
        return Runner(
            name="django",
            test_cmd="./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1",
            log_format="django",
            why="test runner: the repository's tests/runtests.py (django's runner)",
        )
    if facts.pytest_configured:
        why = "test runner: pytest (configured in " + _pytest_config_file(files) + ")"
    elif _tests_import_pytest(files):
        why = "test runner: pytest (the tests import it)"
    else:
        why = "test runner: pytest (no configuration found; it runs unittest tests too)"
    return Runner(test_cmd="pytest -rA", log_format="pytest", why=why)


def _pytest_config_file(files: Files) -> str:
    for path in ("pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini"):
        text = files.read(path) or ""
        if re.search(r"^\[(tool:)?pytest\]|^\[tool\.pytest", text, re.MULTILINE):
            return path
    return "pytest.ini"


_TEST_FILE = re.compile(r"(^|/)tests?/.*\.py$|(^|/)test_[^/]*\.py$")


def _tests_import_pytest(files: Files) -> bool:
    tests = [p for p in files.paths if _TEST_FILE.search(p)]
    return any(
        re.search(r"^\s*(import|from) pytest\b", files.read(p) or "", re.MULTILINE)
        for p in tests[:40]
    )


# --------------------------------------------------------------------------- services


class KnownService(BaseModel):
    """A local service the tests reach through an environment variable, served on loopback
    (the network is off when tests run)."""

    setup: list[str]
    services: list[Service]
    env: dict[str, str]
    why: str


_HTTPBIN = f"{SERVICES_DIR}/httpbin"
_HTTPBIN_PINS = "httpbin==0.10.4 flask==3.1.3 werkzeug==3.1.9"
# the services tests name by a well-known variable: httpbin (HTTPBIN_URL, httpbin.org by
# default), in a virtual environment of its own
KNOWN_SERVICES = {
    "HTTPBIN_URL": KnownService(
        setup=[
            f"python3 -m venv {_HTTPBIN}",
            # uv where the image has it (the venv's own old pip resolves these in gigabytes)
            f"uv pip install -q --python {_HTTPBIN}/bin/python {_HTTPBIN_PINS} || "
            f"{{ {_HTTPBIN}/bin/python -m pip install -q pip==24.2 && "
            f"{_HTTPBIN}/bin/python -m pip install -q {_HTTPBIN_PINS}; }}",
        ],
        services=[
            Service(
                command=f"{_HTTPBIN}/bin/python -m httpbin.core --host 127.0.0.1 --port 8765",
                port=8765,
            )
        ],
        env={"HTTPBIN_URL": "http://127.0.0.1:8765/"},
        why="tests read HTTPBIN_URL (httpbin.org by default): a local httpbin serves them",
    ),
}


def service_for(files: Files) -> KnownService | None:
    """The known service whose variable the test files read from the environment."""
    tests = [p for p in files.paths if _TEST_FILE.search(p)][:200]
    for variable, service in KNOWN_SERVICES.items():
        wanted = re.compile(rf"environ(\.get\(|\[)\s*['\"]{variable}['\"]")
        if any(wanted.search(files.read(p) or "") for p in tests):
            return service
    return None


# --------------------------------------------------------------------------- requirements


def suite_requirements(
    files: Files, facts: Packaging, listed: dict[str, list[str]], runner: Runner
) -> tuple[list[str], list[str], list[str]]:
    """The extras to install the project with, the other requirements, and why: the
    extras tox's test environment installs (else those named test/tests/testing, else
    dev), the dependency groups it installs (else those named test/tests/testing),
    ``tests_require``, test and dev requirements files (when neither a test extra nor a
    test group says), tox's deps, a noxfile's installs, environment.yml's pip list; minus
    linters, coverage upload, docs and release tools, minus the project itself; pytest at
    least the oldest release that runs on the Python."""
    why: list[str] = []
    extras, extras_why = _chosen(facts.extras, facts.tox_extras, "extras", facts)
    extras = extras or [e for e in facts.extras if e.lower() in DEV_EXTRAS][:1]
    if extras:
        why.append(
            f"extras: {', '.join(extras)}{extras_why} (of {', '.join(sorted(facts.extras))})"
        )
    groups, groups_why = _chosen(facts.groups, facts.tox_groups, "dependency_groups", facts)
    found: list[str] = list(facts.tests_require)
    for group in groups:
        found += facts.groups[group]
        why.append(f"dependency group {group} (pyproject.toml){groups_why}")
    if facts.tests_require:
        why.append("tests_require of setup.py/setup.cfg")
    if not (groups or (extras and (extras_why or extras[0] in TEST_EXTRAS))):
        listed = _from_requirement_files(files, facts, runner) | listed
    for source, deps in listed.items():
        if deps:
            found += deps
            why.append(source)
    own = requirement_name(facts.name) if facts.name else ""
    keep_cov = "--cov" in facts.pytest_addopts
    kept = for_tests(found, own, keep_cov)
    if keep_cov and "pytest-cov" not in kept:
        kept["pytest-cov"] = "pytest-cov"
        why.append("pytest-cov: pytest's addopts use --cov")
    return extras, list(kept.values()), why


def _chosen(
    defined: dict[str, list[str]], by_tox: list[str], setting: str, facts: Packaging
) -> tuple[list[str], str]:
    """The extras (or dependency groups) the tests install: those tox's test environment
    names that the packaging defines, else those named test/tests/testing; a name tox
    gives that the packaging does not define (as read) is noted in ``facts.unread``."""
    missing = [n for n in by_tox if n not in defined]
    if missing:
        facts.unread.append(
            f"tox.ini [testenv] {setting} {', '.join(missing)}: not defined by the "
            "packaging files as read"
        )
    named = [n for n in by_tox if n in defined]
    if named:
        return named, f" (tox.ini [testenv] {setting})"
    return [n for n in defined if n.lower() in TEST_EXTRAS], ""


def _from_requirement_files(files: Files, facts: Packaging, runner: Runner) -> dict[str, list[str]]:
    """The test requirements files' requirements (:func:`requirement_files`; django's
    under tests/requirements/), and requirements.txt when the packaging lists no
    dependencies."""
    paths = requirement_files(files.paths)
    if runner.name == "django":
        paths = [p for p in paths if p.startswith("tests/requirements/")]
    if not facts.install_requires and files.exists("requirements.txt"):
        paths.insert(0, "requirements.txt")
    found: dict[str, list[str]] = {}
    for path in paths:
        reqs = requirements_file(path, files.read)
        if reqs:
            found[f"requirements file {path}"] = reqs
            facts.sources.append(path)
    return found


def for_tests(requirements: list[str], own: str, keep_cov: bool) -> dict[str, str]:
    """The requirements the tests need, by name (the first of each name): not the project
    itself, nor the runner's own packages (they follow from the pytest that runs on the
    Python), nor linters, coverage, docs and release tools (coverage when pytest's addopts
    use it)."""
    kept: dict[str, str] = {}
    for req in requirements:
        name = requirement_name(req)
        if not name or name == own or name in kept or name in RUNNER_PACKAGES:
            continue
        if NOT_FOR_TESTS.match(name) and not (keep_cov and name in ("coverage", "pytest-cov")):
            continue
        kept[name] = req
    return kept


def requirement_files(paths: list[str]) -> list[str]:
    """The test requirements files: those named for tests, else those named for
    development; never docs, nor the oldest-versions variants (``tests-min.txt``)."""
    candidates = [
        p for p in paths
        if REQUIREMENT_FILE.match(p)
        and not re.search(r"doc|min|oldest|lowest|lint|pre.?commit|typing|mypy", p, re.IGNORECASE)
    ]  # fmt: skip
    tests = [p for p in candidates if re.search(r"test", p, re.IGNORECASE)]
    return tests or [p for p in candidates if re.search(r"dev", p, re.IGNORECASE)]


def _editable_capable(build_requires: list[str]) -> bool:
    """Whether the setuptools the build requirements allow includes one with editable
    builds (PEP 660, setuptools 64): one up to the build constraints' cap, or a newer one
    they demand (which then raises the cap, :func:`~orchestrator.plan.pins.build_constraints`)."""
    if newer_setuptools(build_requires):
        return True
    for req in build_requires:
        try:
            parsed = Requirement(req)
        except InvalidRequirement:
            continue
        if canonicalize_name(parsed.name) == "setuptools" and parsed.specifier:
            return any(parsed.specifier.contains(v) for v in ("64.0.0", "68.0.0", "75.1.0"))
    return True


def build_needs(files: Files, facts: Packaging) -> tuple[list[str], list[str]]:
    """What must be in the environment before the project builds, and why: the
    third-party modules a setup.py imports when no ``[build-system]`` declares them (the
    project is then built without isolation, on them); Cython for ``.pyx`` sources."""
    why: list[str] = []
    extensions = any(p.endswith((".pyx", ".c", ".cpp")) for p in files.paths) or "Extension(" in (
        files.read("setup.py") or ""
    )
    if extensions:
        why.append(
            "compiled extensions: built in the container with the base image's compiler "
            "and Python headers"
        )
    if facts.build_requires and not _editable_capable(facts.build_requires):
        needs = [r for r in facts.build_requires if requirement_name(r) != "setuptools"]
        why.append(
            f"build requirements: {', '.join(facts.build_requires)} (pyproject.toml) pin a "
            "setuptools older than editable builds (64): built without isolation, on an "
            "editable-capable setuptools in the environment"
        )
        return _with_editable_build_tools(needs), why
    if facts.build_requires:
        backend = f", backend {facts.build_backend}" if facts.build_backend else ""
        why.append(
            f"build requirements: {', '.join(facts.build_requires)} (pyproject.toml{backend}); "
            "built in isolation"
        )
        return [], why
    needs = [MODULE_DISTRIBUTIONS.get(m, m) for m in facts.setup_imports]
    if any(p.endswith(".pyx") for p in files.paths) and "cython" not in needs:
        needs.append("cython")
    if extensions and "numpy" not in needs and (script := _numpy_build_script(files)):
        needs.append("numpy")
        why.append(f"numpy before the build: {script} uses it, and the build compiles extensions")
    if needs:
        why.append(f"built on {', '.join(needs)} (setup.py imports them; no [build-system])")
    cimported = [d for d in cimported_distributions(files) if d not in needs]
    if cimported:
        needs += cimported
        why.append(f"built on {', '.join(cimported)}: the Cython sources cimport them")
    if needs:
        needs = _with_editable_build_tools(needs)
    return needs, why


def _with_editable_build_tools(needs: list[str]) -> list[str]:
    have = {requirement_name(n) for n in needs}
    return [*needs, *(t for t in EDITABLE_BUILD_TOOLS if requirement_name(t) not in have)]


# Cython's own declarations (``cimport libc.math``): no distribution
CYTHON_BUILTINS = frozenset({"cython", "libc", "libcpp", "cpython", "posix", "openmp"})
_CIMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+([A-Za-z_][\w.]*)[ \t]+cimport|cimport[ \t]+([A-Za-z_][\w.]*))", re.M
)


def cimported_distributions(files: Files) -> list[str]:
    """The distributions whose Cython declarations (``.pxd``) the Cython sources cimport
    (``from scipy.linalg.cython_blas cimport dgemm``): they must be installed before the
    sources compile. Not Cython's own, nor the project's (its packages, and the modules
    beside the cimporting file: ``from typedefs cimport DTYPE_t``)."""
    own = own_modules(files.paths)
    paths = set(files.paths)
    folders = {p.rpartition("/")[0] for p in paths}
    found: list[str] = []
    sources = [p for p in files.paths if p.endswith((".pyx", ".pxd"))]
    for path in sources[:400]:
        here = path.rpartition("/")[0]
        for match in _CIMPORT.finditer(files.read(path) or ""):
            module = (match.group(1) or match.group(2)).split(".")[0]
            local = f"{here}/{module}" if here else module
            beside = local in folders or {f"{local}.pxd", f"{local}.pyx"} & paths
            if module in CYTHON_BUILTINS or module in own or beside:
                continue
            distribution = MODULE_DISTRIBUTIONS.get(module, module)
            if distribution not in found:
                found.append(distribution)
    return found


# the scripts a legacy build runs: setup.py and its per-package parts (astropy's
# setup_package.py, numpy.distutils' setup.py in subpackages)
_BUILD_SCRIPT = re.compile(r"(^|/)(setup|setup_package)\.py$")
_NUMPY_USE = re.compile(r"^\s*(import numpy|from numpy[ .])|get_include\(\)|['\"]numpy['\"]", re.M)


def _numpy_build_script(files: Files) -> str:
    """The first build script that uses numpy (imports it, anywhere, or names its include
    directory), when a legacy build's extensions are built on numpy's C API; else ""."""
    scripts = sorted((p for p in files.paths if _BUILD_SCRIPT.search(p)), key=len)
    for path in scripts[:200]:
        if _NUMPY_USE.search(files.read(path) or ""):
            return path
    return ""


# --------------------------------------------------------------------------- install

# setuptools' editable install puts the source directory on sys.path (a .pth file), as
# `setup.py develop` did, not an import hook: tools that find modules by walking sys.path
# (pylint's astroid) see the checkout (other build backends ignore the setting)
COMPAT = "-C editable_mode=compat"
PIP_COMPAT = "--config-settings editable_mode=compat"


def import_names(files: Files, facts: Packaging) -> list[str]:
    """The project's own top-level module, when the checkout has one named for the
    distribution (``widget/``, ``widget.py``, under ``src/`` too): what must import once the
    environment is installed."""
    if not facts.name:
        return []
    module = requirement_name(facts.name).replace("-", "_")
    for base in ("", "src/"):
        if files.exists(f"{base}{module}/__init__.py") or files.exists(f"{base}{module}.py"):
            return [module]
    return []


# uv's hint when a cut-off leaves no version of a requirement (a project that deleted its
# old releases, atomicwrites', or a requirement newer than the commit): "name day"
LATE_HINT = shlex.quote(
    r"s/.*`\([^`]*\)` was filtered by `exclude-newer`.* published at \([0-9-]*\)T.*/\1 \2/p"
)


# uv's hint when a build without isolation imports a module it does not declare (astropy's
# setup_package.py and jinja2): the module, installed into the environment before a retry
UNDECLARED_HINT = shlex.quote(
    r"s/.*depends on `\([A-Za-z0-9_]*\)`, but doesn't declare it as a build dependency.*/\1/p"
)


def install_command(
    target: str,
    requirements: list[str],
    build_first: list[str],
    cutoffs: list[str],
    exempt: dict[str, str],
    name: str,
    extra_requirements: list[str] | None = None,
    runner: tuple[str, str] | None = None,
    imports: list[str] | None = None,
    plugins: list[str] | None = None,
) -> str:
    """Bash that installs the project editable with its requirements, as of each cut-off
    in turn until one resolves (uv; pip without a cut-off where the image has no uv). When
    no cut-off installs them together, the project alone (no extras) as of the first that
    installs it, then each requirement on its own (its extras' too), as of that cut-off or,
    when it does not install then, of the first later one that installs it (a library of
    the commit's day with neither a wheel for the Python nor sources that build there); a
    requirement that installs as of none of them is dropped and the log says so: validation decides
    whether the tests needed it. ``runner``: the test runner's requirement and cut-off,
    installed last (over what the project's requirements brought). ``imports``: the
    project's modules, which must import once installed: a cut-off whose libraries install
    but do not run on the Python (a stand-in's, later than the commit's) passes to the next,
    upgrading; when none imports, the install of the first cut-off that installed stays.
    ``plugins``: the runner's plugins among the requirements, upgraded as of its cut-off
    after it (when they cannot be, the log says so and the versions installed stay)."""
    quoted = " ".join(shlex.quote(r) for r in requirements)
    one_by_one = " ".join(shlex.quote(r) for r in [*(extra_requirements or []), *requirements])
    first = " ".join(shlex.quote(b) for b in build_first)
    isolation, pip_isolation = "", ""
    if build_first:
        isolation = f"--no-build-isolation-package {shlex.quote(name)}" if name else ""
        isolation = isolation or "--no-build-isolation"
        pip_isolation = "--no-build-isolation "
    exempted = " ".join(
        f"--exclude-newer-package {shlex.quote(f'{k}={v}')}" for k, v in exempt.items()
    )
    module_cases = " ".join(f"{m}) echo {d};;" for m, d in MODULE_DISTRIBUTIONS.items())
    cutoff_words = " ".join(c or "none" for c in cutoffs)
    import_words = " ".join(shlex.quote(m) for m in imports or [])
    built_first = '{ [ ${#first[@]} -eq 0 ] || add "${first[@]}"; }'
    pip_project = f'-e {shlex.quote(target)} "${{reqs[@]}}"'
    # uv reads a bare path's name by building its metadata, in isolation (without the
    # build requirements installed first): named, the path is built on the environment
    alone = f"{name} @ ." if build_first and name else "."
    editable = f"{name}{target.removeprefix('.')} @ ." if build_first and name else target
    project = f'{isolation} {COMPAT} -e {shlex.quote(editable)} "${{reqs[@]}}"'
    runner_step, pip_runner = ":", ""
    if runner is not None:
        spec, cutoff = (shlex.quote(part) for part in runner)
        pip_runner = spec
        runner_step = (
            f'as_of {cutoff}; add {spec} || echo ">>> the test runner {spec} does not install"'
        )
        if plugins:
            names = " ".join(
                f"--upgrade-package {shlex.quote(requirement_name(r))}" for r in plugins
            )
            words = " ".join(shlex.quote(r) for r in plugins)
            runner_step += (
                f"\n    add {names} {words} || echo \">>> the test runner's plugins {words} "
                'are not upgraded"'
            )
    return f"""reqs=({quoted})
each=({one_by_one})
first=({first})
if ! command -v uv >/dev/null; then
  echo "no uv in the image: installing with pip, without a date cut-off"
  {{ [ ${{#first[@]}} -eq 0 ] || python -m pip install "${{first[@]}}"; }} \
    && python -m pip install {pip_isolation}{PIP_COMPAT} {pip_project} {pip_runner}
  exit $?
fi
late=()
distribution_of() {{ case "$1" in {module_cases} *) echo "$1";; esac; }}
as_of() {{ when=(); [ "$1" = none ] || when=(--exclude-newer "$1" {exempted} "${{late[@]}}"); }}
add() {{
  local out found name until missing undeclared=()
  while :; do
    out=$(uv pip install "${{when[@]}}" -b "$PIP_CONSTRAINT" "$@" 2>&1)
    local status=$?
    printf '%s\n' "$out"
    [ $status -eq 0 ] && return 0
    missing=$(printf '%s\n' "$out" | sed -n {UNDECLARED_HINT} | head -n 1)
    if [ -n "$missing" ] && [[ " ${{undeclared[*]}} " != *" $missing "* ]]; then
      undeclared+=("$missing")
      echo ">>> the build imports $missing, which it does not declare: installed first"
      uv pip install "${{when[@]}}" -b "$PIP_CONSTRAINT" "$(distribution_of "$missing")" && continue
    fi
    [ ${{#when[@]}} -gt 0 ] || return 1
    found=$(printf '%s\n' "$out" | sed -n {LATE_HINT} | head -n 1)
    name=${{found%% *}}
    [ -n "$found" ] && [[ " ${{late[*]}} " != *" $name="* ]] || return 1
    until=$(date -u -d "${{found#* }} + 1 day" +%Y-%m-%dT00:00:00Z) || return 1
    echo ">>> $name has no release before the cut-off that fits: allowed up to $until"
    late+=(--exclude-newer-package "$name=$until")
    when+=(--exclude-newer-package "$name=$until")
  done
}}
imports=({import_words})
imports_ok() {{
  local module why
  for module in "${{imports[@]}}"; do
    if ! why=$(python -c "import $module" 2>&1); then
      echo ">>> $module does not import as of $cutoff: $(printf '%s' "$why" | tail -n 1)"
      return 1
    fi
  done
}}
upgrade=() installed=""
for cutoff in {cutoff_words}; do
  as_of "$cutoff"
  echo ">>> resolving as of $cutoff"
  if {built_first} && add "${{upgrade[@]}}" {project}; then
    installed=${{installed:-$cutoff}}
    upgrade=(--upgrade)
    imports_ok || continue
    echo ">>> installed as of $cutoff"
    {runner_step}
    exit 0
  fi
done
if [ -n "$installed" ]; then
  cutoff=$installed
  as_of "$cutoff"
  echo ">>> it imports as of no cut-off: installed as of $cutoff"
  {built_first} && add --upgrade {project} || exit 1
  {runner_step}
  exit 0
fi
echo ">>> no cut-off installs it all: the project alone, then each requirement"
for cutoff in {cutoff_words}; do
  as_of "$cutoff"
  if {built_first} && add {isolation} {COMPAT} -e {shlex.quote(alone)}; then
    echo ">>> the project installed as of $cutoff"
    for req in "${{each[@]}}"; do
      later=""
      for req_cutoff in {cutoff_words}; do
        [ "$req_cutoff" = "$cutoff" ] && later=1
        [ -n "$later" ] || continue
        as_of "$req_cutoff"
        if add "$req"; then
          [ "$req_cutoff" = "$cutoff" ] || echo ">>> requirement $req installed as of $req_cutoff"
          continue 2
        fi
      done
      echo ">>> dropped requirement $req: it does not install as of $cutoff or later"
    done
    as_of "$cutoff"
    {runner_step}
    exit 0
  fi
done
exit 1"""
