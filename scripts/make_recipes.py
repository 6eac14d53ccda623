"""Generate ``orchestrator/data/recipes.json`` from the SWE-bench reference data.

Usage: ``python scripts/make_recipes.py [--data ../shared/data] [--out FILE]``

Reads ``swe-bench-verified.jsonl``, ``swebench-specs/specs.json`` and
``swebench-specs/environments/<instance_id>.yml`` and writes one recipe per ``(repo, version)``
of the Verified instances. What goes into a recipe is described in
``orchestrator/recipes/recipe.py``; this script holds the conda -> PyPI translation.
Run it again when the data changes and commit the output: the runtime never reads
``../shared``. Needs PyYAML (installed with ``datasets``).
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from collections import Counter, defaultdict
from pathlib import Path

import yaml
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestrator.recipes.recipe import Recipe, load_recipes  # noqa: E402
from sandbox_tools.contract import SERVICES_DIR, SWE_DIR, VENV  # noqa: E402

# conda package -> PyPI distribution, where the names differ (None: nothing to install)
CONDA_TO_PYPI: dict[str, str | None] = {
    "matplotlib-base": "matplotlib",
    "seaborn-base": "seaborn",
    "brotli-python": "brotli",
    "msgpack-python": "msgpack",
    "python-tzdata": "tzdata",
    "python-xxhash": "xxhash",
    "python-fastjsonschema": "fastjsonschema",
    "python-eccodes": "eccodes",
    "nbconvert-core": "nbconvert",
    "antlr-python-runtime": "antlr4-python3-runtime",
    "iris": "scitools-iris",
    "setuptools_scm": "setuptools-scm",  # a metapackage there (no py build tag)
    # parts of a package pinned under its own name, or no such PyPI distribution
    "numpy-base": None,
    "pyarrow-core": None,
    "pybind11-global": None,
    "libcf": None,
    "cdms2": None,
    "cdat_info": None,
    "cdtime": None,
    "distarray": None,
    "esmpy": None,
    # GUI bindings that pip can only build against system libraries
    "pyqt": None,
    "sip": None,
    "pyqt5-sip": None,
    "wxpython": None,
    "pygobject": None,
    "pycairo": None,
    # the interpreter and installer come from the base image
    "python": None,
    "pip": None,
}
# What the specs leave to the internet or to a file edit that phase 4 reverts, made to work
# offline: fields merged into the recipes of a repository (and versions; None = all).
_HTTPBIN = f"{SERVICES_DIR}/httpbin"
_MPLSETUPCFG = f"{SWE_DIR}/mplsetup.cfg"
FIXES: list[tuple[str, set[str] | None, dict[str, object]]] = [
    # test_requests.py calls HTTPBIN_URL (httpbin.org by default): a local httpbin instead
    (
        "psf/requests",
        {"0.13", "0.14", "1.1", "1.2", "2.0", "2.2", "2.3", "2.4", "2.5", "2.7", "2.8"},
        {
            "service_setup": [
                f"python3 -m venv {_HTTPBIN}",
                f"{_HTTPBIN}/bin/python -m pip install -q pip==24.2 httpbin==0.10.4 "
                "flask==3.1.3 werkzeug==3.1.9",
            ],
            "services": [
                {
                    "command": f"{_HTTPBIN}/bin/python -m httpbin.core "
                    "--host 127.0.0.1 --port 8765",
                    "port": 8765,
                }
            ],
            "env": {"HTTPBIN_URL": "http://127.0.0.1:8765/"},
        },
    ),
    # the frozen environment's pytest 7.4 deprecates nose-style `setup(self)` (7.2+); once a
    # test has used astropy's catch_warnings, its treat_deprecations_as_exceptions turns every
    # DeprecationWarning into an error (the specs' -p no:warnings leaves the filters to it),
    # so every FitsTestCase test errors at setup, FAIL_TO_PASS ones with the gold patch
    # (astropy-8707, -8872): pytest 7.1.3, the last without that warning
    ("astropy/astropy", {"3.0", "3.1"}, {"pin_overrides": {"pytest": "pytest==7.1.3"}}),
    # setuptools 68 puts its own distutils first, whose LooseVersion warns; with astropy's
    # DeprecationWarnings-as-errors a test module using it fails to import (astropy-8872's
    # test patch): the standard library's distutils (no such warning in 3.9) for the tests
    (
        "astropy/astropy",
        {"3.0", "3.1"},
        {"eval_commands+": ["export SETUPTOOLS_USE_DISTUTILS=stdlib"]},
    ),
    # the specs' `sed` adding -rA to tox.ini is undone when phase 4 restores a clean tree;
    # sphinx's tox.ini passes PYTEST_ADDOPTS through. tox-current-env links
    # .tox/py39/bin/python to the venv's python, but Python 3.9 looks for pyvenv.cfg beside
    # the link, not its target (site.py), and starts outside the venv ("No module named
    # pytest"): give .tox/py39 the venv's pyvenv.cfg and lib.
    (
        "sphinx-doc/sphinx",
        None,
        {
            "env": {"PYTEST_ADDOPTS": "-rA"},
            "pre_install+": [
                f"mkdir -p .tox/py39 && cp {VENV}/pyvenv.cfg .tox/py39/ "
                f"&& ln -sfn {VENV}/lib .tox/py39/lib"
            ],
        },
    ),
    # matplotlib's specs download qhull from its own host, and matplotlib's setup.py
    # downloads freetype 2.6.1 (3.4+) from others: neither is PyPI or Debian. When the
    # download fails, Debian's qhull and freetype instead, through matplotlib's
    # system_qhull/system_freetype build options (3.4+; 3.0-3.3 use the system's freetype
    # anyway and fall back to their bundled qhull); MPLSETUPCFG names the options file so
    # that it stays out of the checkout, and without that file the build is unchanged.
    (
        "matplotlib/matplotlib",
        None,
        {
            "pre_install_replace": {
                'wget -O "$QHULL_TAR" "$QHULL_URL"': (
                    'wget -T 30 -t 2 -O "$QHULL_TAR" "$QHULL_URL" || { rm -f "$QHULL_TAR"; '
                    "echo \"qhull's host is out of reach: Debian's qhull and freetype\"; "
                    "apt-get install -y libqhull-dev libfreetype6-dev pkg-config "
                    "&& printf '[libs]\\nsystem_qhull = True\\nsystem_freetype = True\\n' "
                    f"> {_MPLSETUPCFG}; }}"
                ),
                'tar -xvzf "$QHULL_TAR" -C "$QHULL_BUILD_DIR"': (
                    '[ ! -f "$QHULL_TAR" ] || tar -xvzf "$QHULL_TAR" -C "$QHULL_BUILD_DIR"'
                ),
            },
            "env": {"MPLSETUPCFG": _MPLSETUPCFG},
        },
    ),
    # sphinx 3.3's tox.ini sets PYTEST_ADDOPTS itself (`setenv = PYTEST_ADDOPTS = --color
    # yes`; later versions keep {env:PYTEST_ADDOPTS:}), so -rA goes through tox's posargs
    # (`pytest --durations 25 {posargs}`): no PASSED lines otherwise (sphinx-8120)
    ("sphinx-doc/sphinx", {"3.3"}, {"test_cmd": "tox --current-env -epy39 -v -- -rA"}),
]


def apply_fixes(recipe: dict[str, object]) -> dict[str, object]:
    """``recipe`` with the :data:`FIXES` of its repository and version merged in."""
    for repo, versions, fields in FIXES:
        if recipe["repo"] == repo and (versions is None or recipe["version"] in versions):
            for key, value in fields.items():
                if key == "pin_overrides":  # {name: pin} replacing the spec's pin of name
                    overrides: dict[str, str] = value  # type: ignore[assignment]
                    packages: list[str] = recipe["packages"]  # type: ignore[assignment]
                    recipe["packages"] = [overrides.get(pin_name(p), p) for p in packages]
                elif key == "pre_install_replace":  # {line: its replacement}
                    lines: dict[str, str] = value  # type: ignore[assignment]
                    pre: list[str] = recipe["pre_install"]  # type: ignore[assignment]
                    recipe["pre_install"] = [lines.get(line, line) for line in pre]
                elif key.endswith("+"):  # appended to the spec's list
                    recipe[key[:-1]] = [*recipe.get(key[:-1], []), *value]  # type: ignore[misc]
                elif isinstance(value, dict):
                    recipe[key] = {**recipe.get(key, {}), **value}  # type: ignore[dict-item]
                else:
                    recipe[key] = value
    return recipe


PY_BUILD = re.compile(r"(^|_)py")  # py39h06a4308_0, pyhd8ed1ab_0, nompi_py310h..., unix_pyh...


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pin_name(pin: str) -> str:
    return normalize(re.split(r"[<>=!~;\[ ]", pin.strip().strip("'\""), maxsplit=1)[0])


def frozen_environment(path: Path, own: str) -> tuple[str, dict[str, str]]:
    """The exact Python and the pip-installable pins (by normalized name) of one env file."""
    env = yaml.safe_load(path.read_text())
    python = ""
    pins: dict[str, str] = {}
    pip_pins: list[str] = []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            pip_pins.extend(dep.get("pip") or [])
            continue
        name, version, build = dep.split("=")
        if name == "python":
            python = version
        if name in CONDA_TO_PYPI:
            pypi = CONDA_TO_PYPI[name]
        else:
            pypi = name if PY_BUILD.search(build) else None
        if pypi:
            pins[normalize(pypi)] = f"{pypi}=={version}"
    for pin in pip_pins:  # pip ran after conda: its versions win
        pins[pin_name(pin)] = pin
    pins.pop(normalize(own), None)
    return python, pins


def newest(pin: str) -> tuple[int, Version | str]:
    version = pin.split("==", 1)[-1]
    try:
        return 1, Version(version)
    except InvalidVersion:
        return 0, version


def majority(values: list[str]) -> str:
    counts = Counter(values)
    return max(counts, key=lambda v: (counts[v], newest(v)))


def split_eval(commands: list[str]) -> tuple[dict[str, str], list[str]]:
    env: dict[str, str] = {}
    rest: list[str] = []
    for command in commands:
        words = shlex.split(command)
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            name, _, value = words[1].partition("=")
            env[name] = value
        else:
            rest.append(command)
    return env, rest


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def build(data: Path) -> dict:
    specs_file = json.loads((data / "swebench-specs" / "specs.json").read_text())
    specs, log_formats = specs_file["specs"], specs_file["log_format"]
    instances = [json.loads(line) for line in (data / "swe-bench-verified.jsonl").open()]
    pairs: dict[tuple[str, str], list[str]] = defaultdict(list)
    for row in instances:
        pairs[(row["repo"], row["version"])].append(row["instance_id"])

    recipes = []
    for (repo, version), ids in sorted(
        pairs.items(), key=lambda p: (p[0][0], version_key(p[0][1]))
    ):
        spec = specs[repo][version]
        own = repo.split("/")[1]
        frozen = {
            iid: frozen_environment(data / "swebench-specs" / "environments" / f"{iid}.yml", own)
            for iid in ids
        }
        by_name: dict[str, list[str]] = defaultdict(list)
        for _, pins in frozen.values():
            for name, pin in pins.items():
                by_name[name].append(pin)
        common = {
            name: majority(pins) for name, pins in by_name.items() if 2 * len(pins) >= len(ids)
        }
        for pin in spec.get("pip_packages", []):  # a spec pin that no frozen env shows
            if pin_name(pin) not in by_name and pin_name(pin) != normalize(own):
                common[pin_name(pin)] = pin
        instance_pins = {}
        for iid, (_, pins) in frozen.items():
            own_pins = sorted(
                (pin for name, pin in pins.items() if common.get(name) != pin), key=pin_name
            )
            if own_pins:
                instance_pins[iid] = own_pins
        env, eval_commands = split_eval(spec.get("eval_commands", []))
        recipe = Recipe(
            repo=repo,
            version=version,
            python=spec["python"],
            python_frozen=majority([python for python, _ in frozen.values()]),
            packages=sorted(common.values(), key=pin_name),
            spec_packages=spec.get("packages", ""),
            pre_install=spec.get("pre_install", []),
            install=spec["install"],
            eval_commands=eval_commands,
            env=env,
            test_cmd=spec["test_cmd"],
            log_format=log_formats[repo],
            instance_pins=instance_pins,
        )
        recipes.append(apply_fixes(recipe.model_dump(mode="json")))
    return {
        "source": (
            "scripts/make_recipes.py from SWE-bench Verified, "
            f"{specs_file.get('source', 'swebench specs')}, and the frozen environments/*.yml"
        ),
        "recipes": recipes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "orchestrator" / "data" / "recipes.json")
    args = parser.parse_args()
    result = build(args.data)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    load_recipes.cache_clear()
    print(f"{args.out}: {len(result['recipes'])} recipes, {args.out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
