"""The shell scripts of phases 2-4, run by real bash (no container needed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orchestrator.base_commit.scripts import base_commit_script
from orchestrator.models import Instance
from orchestrator.plan.install import install_script
from orchestrator.plan.pins import raise_pins
from orchestrator.recipes.recipe import Recipe, load_recipes
from orchestrator.sandbox.scripts import render
from orchestrator.setup.scripts import environment_script


def recipe_setup_script(recipe: Recipe, pins: list[str], **environment: Any) -> str:
    """Phases 2 and 3 of a recipe as one runnable bash script (their two scripts in a row)."""
    return render(environment_script(recipe, pins, **environment)) + render(
        install_script(recipe, pins)
    )


def _recipe(**fields: object) -> Recipe:
    base = {"repo": "a/b", "version": "1", "python": "3.11", "install": "true",
            "test_cmd": "pytest", "log_format": "pytest"}  # fmt: skip
    return Recipe(**{**base, **fields})


def _section(script: str, start: str, end: str) -> str:
    return script[script.index(start) + len(start) : script.index(end)]


def test_pre_install_lines_share_one_shell_and_stop_at_the_first_failure():
    recipe = _recipe(pre_install=['X="shared value"', 'echo "got $X"', "false", "echo LATER"])
    body = _section(recipe_setup_script(recipe, []), 'step "pre-install"', 'step "install')
    done = subprocess.run(
        ["bash", "-c", 'fail() { echo "FAILED: $*"; exit 1; }\n' + body],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 1
    assert "got shared value" in done.stdout and "FAILED: pre-install" in done.stdout
    assert "LATER" not in done.stdout + done.stderr


@pytest.mark.parametrize("key", sorted(load_recipes()), ids=lambda k: f"{k[0]}@{k[1]}")
def test_every_shipped_recipe_gives_a_script_bash_can_parse(key):
    recipe = load_recipes()[key]
    script = recipe_setup_script(recipe, recipe.packages, fetch_python=recipe.python)
    done = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_base_commit_script_parses_with_and_without_a_reinstall():
    instance = Instance(
        instance_id="a__b-1", repo="a/b", base_commit="abc", environment_setup_commit="def"
    )
    for reinstall in (None, "sed -i 's/x/y/' setup.py\npip install -e ."):
        script = base_commit_script(instance, reinstall)
        done = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("pins", "constraint"),
    [
        ([], "setuptools<=75.1.0"),
        (["setuptools==41.6.0", "wheel==0.44.0"], "setuptools<=75.1.0"),  # pylint 3.0
        (["setuptools==80.9.0"], "setuptools<=80.9.0"),
    ],
)
def test_isolated_builds_get_a_setuptools_no_newer_than_the_cap_or_a_newer_pin(pins, constraint):
    from orchestrator.plan.pins import build_constraints

    assert build_constraints(pins).strip() == constraint
    script = recipe_setup_script(_recipe(), pins)
    assert constraint in script and "export PIP_CONSTRAINT=" in script
    assert "pip==24.2" in script  # PEP 660: editable installs of pyproject-only projects
    assert "venv --copies" in script  # tox-current-env links to the venv's python


@pytest.mark.parametrize(
    ("build_requires", "demanded"),
    [
        (["setuptools>=77", "wheel"], "setuptools>=77"),
        (["setuptools>75.1.0"], "setuptools>75.1.0"),
        (["setuptools~=80.3"], "setuptools~=80.3"),
        (["setuptools>=77; python_version >= '3.9'"], "setuptools>=77"),
        (["setuptools>=61,<80"], ""),  # admits releases up to the cap: the cap stays
        (["setuptools>75.0"], ""),
        (["setuptools==75.1.*"], ""),
        (["setuptools"], ""),
        (["hatchling>=1.27"], ""),
    ],
)
def test_a_setuptools_the_build_demands_newer_than_the_cap_is_the_constraint(
    build_requires, demanded
):
    from orchestrator.plan.pins import build_constraints, newer_setuptools

    assert newer_setuptools(build_requires) == demanded
    constraint = demanded or "setuptools<=75.1.0"
    assert build_constraints([], demanded).strip() == constraint
    assert constraint in recipe_setup_script(_recipe(build_setuptools=demanded), [])


def test_exact_python_from_a_mirror_then_the_nearest_base_image_python():
    mirror = {"UV_PYTHON_INSTALL_MIRROR": "file:///opt/swe/python-mirror"}
    script = recipe_setup_script(_recipe(), [], fetch_python="3.6", python_env=mirror)
    assert "UV_PYTHON_INSTALL_MIRROR=file:///opt/swe/python-mirror" in script
    assert "uv python install 3.6" in script
    assert "could not fetch Python 3.6" in script  # the fallback, said in the log
    assert "rm -rf /opt/swe/python-mirror" in script  # the copy is in no image
    assert "UV_PYTHON_INSTALL_MIRROR" not in recipe_setup_script(_recipe(), [])


def test_a_base_commit_newer_than_the_environment_image_comes_from_the_clean_history(tmp_path):
    """The environment image's repository is the mirror as it was when the image was built;
    a base commit fetched into the mirror later (the proxy sweep of docs/validation-proxy.md
    met it: "reference is not a tree") is fetched from the clean history phase 4 puts in."""
    from orchestrator.repos.clean_history import export_clean_git
    from sandbox_tools.contract import CLEAN_GIT, SWE_DIR, TESTBED

    def git(*args: str, cwd=None) -> str:
        env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
               "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}  # fmt: skip
        return subprocess.run(
            ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
        ).stdout.strip()

    work = tmp_path / "work"
    git("init", "-q", "-b", "main", str(work))
    (work / "a.txt").write_text("release\n")
    git("add", "a.txt", cwd=work)
    git("commit", "-qm", "release", cwd=work)
    release = git("rev-parse", "HEAD", cwd=work)
    testbed = tmp_path / "testbed"
    git("clone", "-q", str(work), str(testbed))  # the environment image, built now
    (work / "a.txt").write_text("base\n")
    git("commit", "-qam", "base", cwd=work)  # the mirror gets the base commit later
    base = git("rev-parse", "HEAD", cwd=work)
    swe = tmp_path / "swe"
    export_clean_git(work / ".git", base, swe / "clean-git")
    instance = Instance(instance_id="a__b-1", repo="a/b", base_commit=base,
                        environment_setup_commit=release)  # fmt: skip
    script = base_commit_script(instance, None).replace(CLEAN_GIT, str(swe / "clean-git"))
    script = script.replace(SWE_DIR, str(swe)).replace(TESTBED, str(testbed))
    done = subprocess.run(["bash"], input=script, capture_output=True, text=True)
    assert f"base commit ready: {base}" in done.stdout, done.stdout + done.stderr
    assert (testbed / "a.txt").read_text() == "base\n"


def test_a_pin_without_wheels_for_the_python_falls_back_to_the_newest_of_its_series(tmp_path):
    """scikit-learn 0.20/0.21 pin numpy==1.19.2 and scipy==1.5.2 (Python 3.6); on the 3.9
    stand-in neither has wheels and their sources no longer build (proxy sweep,
    docs/validation-proxy.md). numpy==1.19.* (1.19.5) has them."""
    recipe = _recipe(packages=["numpy==1.19.2", "six==1.16.0", "nowhere==1.0.0"])
    script = recipe_setup_script(recipe, recipe.packages)
    body = _section(script, 'step "pinned packages"', 'step "pre-install"')
    body = body.replace("/opt/swe", str(tmp_path))
    # no uv; "pip" installs only what a Python 3.9 index would have
    stub = (
        'fail() { echo "FAILED: $*"; exit 1; }\n'
        "command() { return 1; }\n"
        'python() { for a in "$@"; do :; done; '
        'case "$a" in "numpy==1.19.*"|"six==1.16.0") echo "pip: $a";; *) return 1;; esac; }\n'
    )
    done = subprocess.run(["bash", "-c", stub + body], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "pin numpy==1.19.2 replaced by numpy==1.19.*" in done.stdout
    assert "dropped pin nowhere==1.0.0" in done.stdout
    assert "dropped pin six" not in done.stdout and "dropped pin numpy" not in done.stdout
    assert (tmp_path / "dropped-pins.txt").read_text() == "nowhere==1.0.0\n"


def test_a_pin_without_wheels_in_its_series_becomes_the_oldest_later_release_with_one(tmp_path):
    """django 2.2 pins pillow==7.2.0 (Python 3.5); no 7.x has a wheel for the 3.9 stand-in
    and its sources need image libraries, so Pillow was dropped: django-10097's
    FAIL_TO_PASS test_validators then skipped (its image subtests need Pillow) and could
    not pass with gold (proxy sweep). The oldest later release with a wheel is 8.0.0."""
    recipe = _recipe(packages=["pillow==7.2.0", "six==1.16.0", "nowhere==1.0.0"])
    script = recipe_setup_script(recipe, recipe.packages)
    body = _section(script, 'step "pinned packages"', 'step "pre-install"')
    body = body.replace("/opt/swe", str(tmp_path))
    # "uv" resolves what a Python 3.9 index would have: six, and pillow only from wheels
    stub = (
        'fail() { echo "FAILED: $*"; exit 1; }\n'
        "python() { return 1; }\n"
        'uv() { case "$*" in\n'
        '  *"--only-binary :all: --resolution lowest pillow>=7.2.0") echo " + pillow==8.0.0";;\n'
        '  *" six==1.16.0") echo "uv: six";;\n'
        "  *) return 1;; esac; }\n"
    )
    done = subprocess.run(["bash", "-c", stub + body], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert " + pillow==8.0.0" in done.stdout
    assert "pin pillow==7.2.0 replaced by the oldest later release with a wheel" in done.stdout
    assert "dropped pin pillow" not in done.stdout
    assert (tmp_path / "dropped-pins.txt").read_text() == "nowhere==1.0.0\n"


@pytest.mark.parametrize(
    ("python", "expected"),
    [
        ((3, 6), "setuptools==40.2.0"),  # the spec's Python: the pin stays
        ((3, 9), "setuptools==41.1.0"),  # 40.2.0 calls HTMLParser.unescape, gone in 3.9
        ((3, 11), "setuptools==41.1.0"),
        ((3, 13), "setuptools==66.1.0"),  # < 66.1 needs pkgutil.ImpImporter, gone in 3.12
    ],
)
def test_a_build_tool_pin_too_old_for_the_stand_in_python_is_raised_to_the_oldest_that_runs(
    python, expected
):
    """django 1.11/2.2 pin setuptools==40.2.0 for Python 3.5; on the 3.9 stand-in
    `python setup.py install` failed on HTMLParser.unescape (proxy sweep)."""
    pins, notes = raise_pins(["setuptools==40.2.0", "wheel==0.37.1", "numpy==1.18.5"], python)
    assert pins == [expected, "wheel==0.37.1", "numpy==1.18.5"]
    assert bool(notes) == (expected != "setuptools==40.2.0")
    assert raise_pins(["setuptools==58.0.4"], (3, 9)) == (["setuptools==58.0.4"], [])


def test_the_set_up_script_raises_the_pin_for_the_python_it_runs_and_logs_it(tmp_path):
    recipe = _recipe(packages=["six==1.16.0", "setuptools==40.2.0"])
    body = _section(recipe_setup_script(recipe, recipe.packages), 'step "pinned packages"',
                    "install_pin() {")  # fmt: skip
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"  # `python`: this one
    done = subprocess.run(
        ["bash", "-c", body + '\necho "PINS ${pins[*]}"'],
        capture_output=True, text=True, env={**os.environ, "PATH": path},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (raised,), notes = raise_pins(["setuptools==40.2.0"], sys.version_info[:2])
    assert sys.version_info >= (3, 9) and notes  # the project's Python: a stand-in for 3.5
    assert f"PINS six==1.16.0 {raised}" in done.stdout
    assert f"pin setuptools==40.2.0 raised to {raised}" in done.stdout


@pytest.mark.parametrize("online", [True, False])
def test_matplotlib_builds_with_debians_qhull_and_freetype_when_qhulls_host_is_out_of_reach(
    tmp_path, online
):
    """matplotlib's recipes download qhull from www.qhull.org, out of reach here (proxy
    sweep: set-up failed for every matplotlib version). Offline: Debian's libraries and
    matplotlib's system_qhull/system_freetype options; online: the recipe as before."""
    recipe = load_recipes()[("matplotlib/matplotlib", "3.5")]
    assert recipe.env["MPLSETUPCFG"] == "/opt/swe/mplsetup.cfg"
    body = _section(recipe_setup_script(recipe, []), 'step "pre-install"', 'step "install')
    body = body.replace("/tmp/qhull", f"{tmp_path}/qhull").replace("/opt/swe", str(tmp_path))
    body = body.replace("/testbed", str(tmp_path / "tb"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stubs = {  # a download that works or not; apt-get and tar only say what they were asked
        "wget": 'echo qhull > "$6"' if online else "exit 4",  # -T 30 -t 2 -O TAR URL
        "apt-get": 'echo "apt-get $*" >> "$LOG"',
        "tar": 'echo "tar $*" >> "$LOG"',
    }
    for name, text in stubs.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{text}\n")
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "calls.log"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "LOG": str(log)}
    done = subprocess.run(
        ["bash", "-c", 'fail() { echo "FAILED: $*"; exit 1; }\n' + body],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    calls = log.read_text()
    cfg = tmp_path / "mplsetup.cfg"
    if online:
        assert "tar -xvzf" in calls and "libqhull-dev" not in calls and not cfg.exists()
    else:
        assert "apt-get install -y libqhull-dev libfreetype6-dev" in calls
        assert "tar " not in calls
        assert cfg.read_text() == "[libs]\nsystem_qhull = True\nsystem_freetype = True\n"
