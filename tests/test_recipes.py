import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import yaml

from orchestrator.errors import UserError
from orchestrator.models import Instance
from orchestrator.recipes.recipe import (
    Recipe,
    directives_of,
    load_recipes,
    pins_for,
    recipe_key,
    suite_command,
    touched_test_files,
)

from .reference_data import (
    ENVIRONMENTS,
    SHARED_DATA,
    SHARED_ENVIRONMENTS,
    SHARED_SPECS,
    SHARED_VERIFIED,
    SPECS,
    VERIFIED,
    shared_data,
)

ROOT = Path(__file__).resolve().parents[1]
SYSTEM_LIBS = {"libgcc-ng", "openssl", "python", "pip", "ca-certificates", "-libgcc-mutex"}
SYSTEM_LIBS |= {"ncurses", "readline", "sqlite", "tk", "xz", "zlib", "libffi", "ld-impl-linux-64"}


def recipe_for(instance: Instance) -> Recipe:
    """The bundled recipe of the instance's ``(repo, version)``."""
    return load_recipes()[(instance.repo, instance.version)]


LOG_FORMATS = {"pytest", "pytest_options", "pytest_v2", "django", "sympy", "seaborn", "matplotlib"}


def norm(pin: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[=<>!~]", pin)[0]).lower()


# libyaml's loader where PyYAML has it: the same safe subset, ten times faster than Python's
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def specs(path: Path = SPECS) -> dict:
    """The SWE-bench harness's specs: the excerpt of the fixtures unless told."""
    return json.loads(path.read_text())


def frozen_environment(instance_id: str, environments: Path = ENVIRONMENTS) -> dict:
    return yaml.load((environments / f"{instance_id}.yml").read_text(), Loader=_SAFE_LOADER)


def frozen_pip_pins(instance_id: str, environments: Path = ENVIRONMENTS) -> list[str]:
    env = frozen_environment(instance_id, environments)
    return [p for dep in env["dependencies"] if isinstance(dep, dict) for p in dep["pip"] or []]


def frozen_conda(instance_id: str) -> dict[str, str]:
    env = frozen_environment(instance_id)
    return {d.split("=")[0]: d.split("=")[1] for d in env["dependencies"] if isinstance(d, str)}


def load(path: Path) -> dict[str, Instance]:
    lines = path.read_text().splitlines()
    return {i.instance_id: i for i in (Instance.model_validate_json(line) for line in lines)}


@pytest.fixture(scope="module")
def instances() -> dict[str, Instance]:
    """The excerpt of Verified in the fixtures."""
    return load(VERIFIED)


@pytest.fixture(scope="module")
def all_instances() -> dict[str, Instance]:
    """Every Verified instance, from the reference data directory."""
    return load(SHARED_VERIFIED)


def patch_instance(repo: str, test_patch: str) -> Instance:
    return Instance(
        instance_id="x__y-1",
        repo=repo,
        base_commit="b",
        environment_setup_commit="e",
        test_patch=test_patch,
    )


def test_each_instance_has_a_recipe_matching_the_specs(instances):
    assert len(load_recipes()) == 80
    recipes_match_the_specs(instances, specs())


@shared_data
def test_every_verified_instance_has_a_recipe_matching_the_specs(all_instances):
    assert len(all_instances) == 500
    recipes_match_the_specs(all_instances, specs(SHARED_SPECS))


def recipes_match_the_specs(instances: dict[str, Instance], specs: dict) -> None:
    for instance in instances.values():
        recipe = recipe_for(instance)
        spec = specs["specs"][instance.repo][instance.version]
        assert (recipe.repo, recipe.version) == (instance.repo, instance.version)
        assert recipe.python == spec["python"]
        assert recipe.python_frozen.startswith(spec["python"] + ".")
        assert recipe.install == spec["install"]
        # sphinx 3.3 asks for -rA through tox's posargs (make_recipes.FIXES)
        assert recipe.test_cmd == spec["test_cmd"] + (
            " -rA" if (instance.repo, instance.version) == ("sphinx-doc/sphinx", "3.3") else ""
        )
        # the specs' lines first, then what make_recipes.FIXES appends (sphinx's .tox/py39)
        specs_lines = spec.get("pre_install", [])
        assert len(recipe.pre_install) >= len(specs_lines)
        replaced = [(a, b) for a, b in zip(specs_lines, recipe.pre_install, strict=False) if a != b]
        # ... but matplotlib's qhull download and unpacking, with an offline fallback
        assert all(
            instance.repo == "matplotlib/matplotlib" and "QHULL_TAR" in a and a.split()[-1] in b
            for a, b in replaced
        ), replaced
        assert all(".tox/py39" in line for line in recipe.pre_install[len(specs_lines) :])
        assert recipe.log_format == specs["log_format"][instance.repo] in LOG_FORMATS


def test_recipe_fields_for_known_pairs(instances):
    django = load_recipes()[("django/django", "3.0")]
    assert django.env == {"LANG": "en_US.UTF-8", "LANGUAGE": "en_US:en", "LC_ALL": "en_US.UTF-8"}
    assert django.eval_commands == ["sed -i '/en_US.UTF-8/s/^# //g' /etc/locale.gen && locale-gen"]
    assert django.spec_packages == "requirements.txt"
    assert "numpy==1.19.5" in django.packages
    sphinx = load_recipes()[("sphinx-doc/sphinx", "7.2")]
    assert sphinx.pre_install[0] == "sed -i 's/pytest/pytest -rA/' tox.ini"
    # the tox.ini edit is undone with the clean tree of phase 4; tox passes PYTEST_ADDOPTS on
    assert sphinx.env == {"PYTEST_ADDOPTS": "-rA"} and sphinx.eval_commands == []


def test_pins_are_clean_pip_requirements():
    for recipe in load_recipes().values():
        names = [norm(p) for p in recipe.packages]
        assert len(names) == len(set(names)), recipe.version
        assert not set(names) & SYSTEM_LIBS
        assert norm(recipe.repo.split("/")[1]) not in names
        for pin in recipe.packages:
            assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*(==[0-9][0-9A-Za-z.+!_-]*)?", pin), pin


def test_conda_python_packages_become_pypi_pins(instances):
    sklearn = load_recipes()[("scikit-learn/scikit-learn", "0.20")]
    conda = frozen_conda("scikit-learn__scikit-learn-10297")
    assert f"numpy=={conda['numpy']}" in sklearn.packages
    assert f"scipy=={conda['scipy']}" in sklearn.packages
    assert f"matplotlib=={conda['matplotlib-base']}" in sklearn.packages
    xarray = load_recipes()[("pydata/xarray", "2022.06")]
    conda = frozen_conda("pydata__xarray-6721")
    assert f"msgpack=={conda['msgpack-python']}" in xarray.packages
    assert not any(norm(p) in {"pyqt", "libnetcdf", "hdf5", "numpy-base"} for p in xarray.packages)


# the only pins that differ from the frozen environments, each a fix of scripts/make_recipes.py
DEVIATIONS = {("astropy/astropy", "3.1"): {"pytest": "pytest==7.1.3"}}


def test_instance_pins_reproduce_the_frozen_pip_environment(instances):
    pins_reproduce_the_frozen_environments(instances, ENVIRONMENTS)


@shared_data
def test_instance_pins_reproduce_each_frozen_pip_environment(all_instances):
    pins_reproduce_the_frozen_environments(all_instances, SHARED_ENVIRONMENTS)


def pins_reproduce_the_frozen_environments(
    instances: dict[str, Instance], environments: Path
) -> None:
    for instance in instances.values():
        recipe = recipe_for(instance)
        pins = pins_for(recipe, instance)
        assert len({norm(p) for p in pins}) == len(pins)
        own = norm(instance.repo.split("/")[1])
        deviations = DEVIATIONS.get((instance.repo, instance.version), {})
        for pin in frozen_pip_pins(instance.instance_id, environments):
            expected = deviations.get(norm(pin), pin)
            assert norm(pin) == own or expected in pins, (instance.instance_id, pin)


def test_instance_specific_astroid(instances):
    recipe = load_recipes()[("pylint-dev/pylint", "2.10")]
    for iid in ("pylint-dev__pylint-4661", "pylint-dev__pylint-4970"):
        astroid = [p for p in frozen_pip_pins(iid) if p.startswith("astroid==")]
        assert [p for p in pins_for(recipe, instances[iid]) if norm(p) == "astroid"] == astroid
    assert recipe.instance_pins == {"pylint-dev__pylint-4661": ["astroid==2.6.6"]}


def test_recipe_key_is_stable_and_tracks_the_environment():
    recipe = load_recipes()[("django/django", "4.0")]
    key = recipe_key(recipe)
    assert re.fullmatch(r"[0-9a-f]{16}", key)
    code = (
        "from orchestrator.recipes.recipe import load_recipes, recipe_key; "
        "print(recipe_key(load_recipes()[('django/django', '4.0')]))"
    )
    other_process = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert other_process.stdout.strip() == key
    assert recipe_key(Recipe.model_validate(recipe.model_dump())) == key
    assert recipe_key(recipe.model_copy(update={"test_cmd": "pytest", "instance_pins": {}})) == key
    assert recipe_key(recipe.model_copy(update={"packages": recipe.packages[1:]})) != key
    assert recipe_key(recipe.model_copy(update={"python": "3.9"})) != key
    keys = {recipe_key(r) for r in load_recipes().values()}
    assert len(keys) == 80


@pytest.mark.parametrize(
    ("python", "nearest"),
    [
        ("3.9", ("3.9", True)),
        ("3.11", ("3.11", True)),
        ("3.5", ("3.9", False)),
        ("3.6", ("3.9", False)),
        ("3.8", ("3.9", False)),
        ("3.10", ("3.9", False)),
        ("3.12", ("3.11", False)),
        ("3.14", ("3.13", False)),
    ],
)
def test_nearest_python(python, nearest):
    recipe = load_recipes()[("django/django", "4.0")].model_copy(update={"python": python})
    assert recipe.nearest_python(["3.9", "3.11", "3.13"]) == nearest
    assert recipe.nearest_python(["3.13", "3.11", "3.9"]) == nearest


def test_nearest_python_edge_cases():
    recipe = load_recipes()[("django/django", "5.0")]
    assert recipe.python == "3.11"
    assert recipe.nearest_python(["3.11.2"]) == ("3.11.2", True)
    assert recipe.nearest_python(["3.9"]) == ("3.9", False)
    with pytest.raises(UserError):
        recipe.nearest_python([])


def test_test_files_of_real_patches(instances):
    assert touched_test_files(instances["django__django-11099"].test_patch) == [
        "tests/auth_tests/test_validators.py"
    ]
    # a rename: both names are touched
    assert touched_test_files(instances["astropy__astropy-7336"].test_patch) == [
        "astropy/units/tests/py3_test_quantity_annotations.py",
        "astropy/units/tests/test_quantity_annotations.py",
        "astropy/units/tests/test_quantity_decorator.py",
    ]
    created = [i for i in instances.values() if "new file mode" in i.test_patch]
    assert created
    for instance in created:
        for path in re.findall(r"^\+\+\+ b/(.*)$", instance.test_patch, re.M):
            assert path in touched_test_files(instance.test_patch)


def test_test_command_django_labels(instances):
    recipe = load_recipes()[("django/django", "4.0")]
    base = "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"
    assert recipe.test_cmd == base
    i = instances["django__django-15525"]
    assert suite_command(recipe_for(i), i) == (
        f"{base} backends.sqlite.test_features fixtures_regress.models fixtures_regress.tests"
    )
    i = instances["django__django-11099"]
    assert suite_command(recipe_for(i), i) == f"{base} auth_tests.test_validators"
    # only data files touched: SWE-bench passes no label, so the whole suite runs
    i = instances["django__django-10097"]
    assert directives_of(i) == [] and suite_command(recipe_for(i), i) == base


def test_test_command_sympy_and_pytest_paths(instances):
    i = instances["sympy__sympy-20590"]
    assert suite_command(recipe_for(i), i) == (
        "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose "
        "sympy/core/tests/test_basic.py"
    )
    i = instances["psf__requests-2931"]
    assert suite_command(recipe_for(i), i) == "pytest -rA test_requests.py"
    i = instances["astropy__astropy-7336"]
    assert directives_of(i) == [
        "astropy/units/tests/test_quantity_annotations.py",
        "astropy/units/tests/test_quantity_decorator.py",
    ]
    i = instances["sphinx-doc__sphinx-11510"]
    assert suite_command(recipe_for(i), i).startswith("tox --current-env -epy39 -v -- ")
    assert "tests/roots/test-directive-include/text.txt" not in directives_of(i)
    assert "tests/roots/test-directive-include/foo.rst" in directives_of(i)


def test_each_instance_with_python_tests_gets_directives(instances):
    instances_get_directives(instances)


@shared_data
def test_every_instance_with_python_tests_gets_directives(all_instances):
    instances_get_directives(all_instances)


def instances_get_directives(instances: dict[str, Instance]) -> None:
    for instance in instances.values():
        directives = directives_of(instance)
        if instance.instance_id != "django__django-10097":
            assert directives, instance.instance_id
        if instance.repo == "django/django":
            assert all("/" not in d and not d.endswith(".py") for d in directives)


SYNTHETIC = """\
diff --git a/tests/old_test.py b/tests/old_test.py
deleted file mode 100644
index 1111111..0000000
--- a/tests/old_test.py
+++ /dev/null
@@ -1 +0,0 @@
--- a line that looks like a header
diff --git "a/tests/t\\303\\251st it.py" "b/tests/t\\303\\251st it.py"
new file mode 100644
index 0000000..2222222
--- /dev/null
+++ "b/tests/t\\303\\251st it.py"
@@ -0,0 +1 @@
+x = 1
diff --git a/tests/with space.py b/tests/with space.py
index 3333333..4444444 100644
--- a/tests/with space.py
+++ b/tests/with space.py
@@ -1 +1 @@
-a
+b
"""


def test_synthetic_patch_with_deletion_quoting_and_spaces():
    assert touched_test_files(SYNTHETIC) == [
        "tests/old_test.py",
        "tests/tést it.py",
        "tests/with space.py",
    ]
    instance = patch_instance("pytest-dev/pytest", SYNTHETIC)
    assert directives_of(instance) == ["tests/tést it.py", "tests/with space.py"]
    recipe = load_recipes()[("pytest-dev/pytest", "5.4")]
    assert suite_command(recipe, instance) == "pytest -rA 'tests/tést it.py' 'tests/with space.py'"
    django = patch_instance("django/django", SYNTHETIC)
    assert directives_of(django) == ["tést it", "with space"]


def test_plain_unified_diff():
    diff = (
        "--- a/pkg/tests/test_x.py\t2020-01-01\n+++ b/pkg/tests/test_x.py\t2020-01-02\n"
        "@@ -1 +1 @@\n-a\n+b\n"
    )
    assert touched_test_files(diff) == ["pkg/tests/test_x.py"]
    assert touched_test_files("") == []


@pytest.mark.parametrize(
    ("install", "changed", "needed"),
    [
        ("python -m pip install -e .", [], False),
        ("python -m pip install -e .", ["sympy/core/add.py", "doc/x.rst"], False),
        ("python -m pip install -e .[test]", ["setup.cfg"], True),
        ("python -m pip install -e .", ["pyproject.toml"], True),
        ("python -m pip install -e .", ["astropy/wcs/src/wcslib_wrap.c"], True),
        ("python -m pip install -e .", ["astropy/io/ascii/cparser.pyx"], True),
        ("python -m pip install -e .", ["requirements/testing.txt"], True),
        ("python setup.py develop", ["pkg/mod.py"], False),
        ("python -m pip install .", ["requests/models.py"], True),  # copied into site-packages
        ("python -m pip install .", [], False),
    ],
)
def test_reinstall_at_the_base_only_when_the_build_reads_what_changed(install, changed, needed):
    from orchestrator.recipes.recipe import reinstall_needed

    assert reinstall_needed(install, changed) is needed


def test_old_requests_recipes_serve_httpbin_locally():
    from orchestrator.recipes.services import service_start_lines

    recipe = load_recipes()[("psf/requests", "2.0")]
    assert recipe.env["HTTPBIN_URL"].startswith("http://127.0.0.1:")
    lines = "\n".join(service_start_lines(recipe, "/tmp"))
    assert "httpbin.core" in lines and "/dev/tcp/127.0.0.1/8765" in lines
    assert load_recipes()[("psf/requests", "2.26")].services == []  # pytest-httpbin era


def test_astropy_3_1_runs_a_pytest_without_the_nose_deprecation():
    """pytest 7.2+ warns on nose-style setup(); astropy 3.1 makes that warning an error once
    a test used its catch_warnings, and every FitsTestCase test errored (astropy-8707)."""
    pins = load_recipes()[("astropy/astropy", "3.1")].packages
    assert "pytest==7.1.3" in pins and not any(p.startswith("pytest==7.4") for p in pins)
    assert "pytest==7.4.0" in load_recipes()[("astropy/astropy", "4.3")].packages
    # ...and the standard library's distutils, whose LooseVersion does not warn (8872)
    recipe = load_recipes()[("astropy/astropy", "3.1")]
    assert recipe.eval_commands == ["export SETUPTOOLS_USE_DISTUTILS=stdlib"]


def test_sphinx_3_3_asks_for_every_result_line_through_tox_posargs():
    """Its tox.ini overrides PYTEST_ADDOPTS (setenv), where later versions extend it: without
    -rA no PASSED lines are printed and every FAIL_TO_PASS test counted missing (8120)."""
    recipe = load_recipes()[("sphinx-doc/sphinx", "3.3")]
    assert recipe.test_cmd == "tox --current-env -epy39 -v -- -rA"
    from orchestrator.recipes.recipe import suite_command

    diff = "--- a/tests/test_intl.py\n+++ b/tests/test_intl.py\n@@ -1 +1,2 @@\n x\n+y\n"
    instance = patch_instance("sphinx-doc/sphinx", diff)
    assert suite_command(recipe, instance).endswith("-- -rA tests/test_intl.py")


@shared_data
def test_the_bundled_recipes_are_what_make_recipes_makes_of_the_reference_data(tmp_path):
    """orchestrator/data/recipes.json is scripts/make_recipes.py's output, unedited (its paths
    are the contract's: tests/test_contract.py)."""
    out = tmp_path / "recipes.json"
    script = ROOT / "scripts" / "make_recipes.py"
    subprocess.run(
        [sys.executable, str(script), "--data", str(SHARED_DATA), "--out", str(out)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    assert out.read_text() == (ROOT / "orchestrator" / "data" / "recipes.json").read_text()
