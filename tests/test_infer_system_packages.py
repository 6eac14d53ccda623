"""The Debian packages the inferred set-up strategy installs: read from CI files, setup
scripts and build options templates (synthetic texts), and installed by bash that skips what
the Debian release lacks (stubbed apt, and the real apt of the base image)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from orchestrator.setup.infer.system_packages import (
    NO_BUILD,
    SystemPackages,
    apt_installs,
    build_switches,
    ci_apt_packages,
    install_lines,
    pkg_config_packages,
    system_packages,
)
from tests.test_infer import make_repo, plan_of

GITHUB_WORKFLOW = """
name: CI
on: [push]
jobs:
  tests:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        python: ["3.10", "3.11"]
    steps:
      - uses: actions/checkout@v4
      - name: Install system packages
        run: |
          sudo apt-get update -yy
          sudo DEBIAN_FRONTEND=noninteractive apt-get install -yy -qq \\
            graphviz \\
            libfreetype6-dev=2.10.4 \\
            ${{ matrix.extra-apt }} $EXTRA_PACKAGES \\
            texlive-latex-extra  # the LaTeX writer's tests
          sudo apt install -y -o Dpkg::Options::=--force-confnew gfortran && echo done
      - run: pip install tox; tox -e py
  docs:
    runs-on: ubuntu-latest
    steps:
      - run: sudo apt-get install -y pandoc inkscape doxygen-latex
"""

TRAVIS = """
language: python
jobs:
  include:
    - python: 3.8
      addons:
        apt:
          packages:
            - gfortran
            - python-scipy
    - python: 3.8
      env: TOXENV=docs
      addons:
        apt:
          packages: [graphviz, texlive]
script: tox
"""


def test_a_workflow_gives_the_packages_its_test_jobs_install() -> None:
    packages = ci_apt_packages(GITHUB_WORKFLOW)
    # versions and ${{ }} / $VARIABLE words dropped; the docs job is not a test job
    assert packages == ["graphviz", "libfreetype6-dev", "texlive-latex-extra", "gfortran"]


def test_travis_apt_addons_count_and_a_docs_job_does_not() -> None:
    assert ci_apt_packages(TRAVIS) == ["gfortran", "python-scipy"]


@pytest.mark.parametrize(
    ("command", "packages"),
    [
        ("sudo apt-get install graphviz", ["graphviz"]),
        ("apt-get -y install --no-install-recommends aa bb:amd64", ["aa", "bb"]),
        ("apt-get update && apt-get install -y xx; apt-get remove yy", ["xx"]),
        ("sudo apt-get update", []),
        ("brew install graphviz", []),
        ("apt-cache show graphviz", []),
        ("sudo apt-get install $DIST_PREREQ", []),
        ("echo apt-get install later", []),
        ("sudo -E env DEBIAN_FRONTEND=noninteractive /usr/bin/apt-get install -qq zz", ["zz"]),
    ],
)
def test_apt_installs_reads_shell_commands(command: str, packages: list[str]) -> None:
    assert apt_installs(command) == packages


def test_large_and_test_irrelevant_packages_are_left_out_with_why() -> None:
    files = {".github/workflows/tests.yml": GITHUB_WORKFLOW, ".travis.yml": TRAVIS,
             "src/speedups.c": "int x;"}  # fmt: skip
    found = system_packages(sorted(files), files.get)
    assert found.packages == ["graphviz", "libfreetype6-dev", "gfortran"]
    assert found.left_out == {
        "texlive-latex-extra": "TeX",
        "python-scipy": "Debian's own Python",
    }
    assert found.sources == [".github/workflows/tests.yml"]
    assert any("left out: texlive-latex-extra (TeX)" in reason for reason in found.reasons)


def test_a_project_without_extensions_gets_no_libraries_nor_build_tools() -> None:
    """Its requirements come as wheels: the CI's headers and compilers serve optional
    requirements built from source; its tools (graphviz) stay."""
    files = {".github/workflows/tests.yml": GITHUB_WORKFLOW, "widget/__init__.py": ""}
    found = system_packages(sorted(files), files.get)
    assert found.packages == ["graphviz"]
    assert found.left_out["gfortran"] == found.left_out["libfreetype6-dev"] == NO_BUILD


def test_a_step_for_the_docs_is_not_read() -> None:
    text = """
jobs:
  tests:
    steps:
      - name: Install graphviz
        if: ${{ matrix.toxenv == 'linkcheck' }}
        run: sudo apt-get install graphviz
      - run: sudo apt-get install -y tzdata
"""
    assert ci_apt_packages(text) == ["tzdata"]


def test_a_docs_workflow_file_is_not_read() -> None:
    files = {".github/workflows/builddoc.yml": "jobs:\n  b:\n    steps:\n"
             "      - run: sudo apt install -y graphviz\n"}  # fmt: skip
    assert system_packages(sorted(files), files.get).packages == []


SETUPEXT = """
class FreeType(SetupPackage):
    def add_flags(self, ext):
        pkg_config.setup_extension(ext, 'freetype2', atleast_version='9.11.3',
                                   alt_exec=['freetype-config'], default_libraries=['freetype'])

class Png(SetupPackage):
    name = "png"
    def get_extension(self):
        pkg_config.setup_extension(ext, 'libpng', default_libraries=['png', 'z'])
"""

TEMPLATE = """# Rename this file to mplsetup.cfg to modify the build options.

[libs]
# By default, the build downloads its own FreeType and Qhull.
#system_freetype = False
#system_qhull = False
#enable_lto = True

[packages]
#tests = False
#system_unknownlib = False
"""


def test_the_libraries_a_setup_script_asks_pkg_config_for() -> None:
    assert pkg_config_packages(SETUPEXT) == ["libfreetype-dev", "libpng-dev"]
    # without pkg-config, quoted names are only words
    assert pkg_config_packages("name = 'freetype2'") == []


def test_a_templates_system_library_switches() -> None:
    switches = build_switches("mplsetup.cfg", TEMPLATE)
    assert [(s.section, s.option, s.package) for s in switches] == [
        ("libs", "system_freetype", "libfreetype-dev"),
        ("libs", "system_qhull", "libqhull-dev"),
    ]


def test_an_inferred_plan_installs_them_first_and_says_so(tmp_path: Path) -> None:
    commit = make_repo(
        tmp_path,
        {
            "setup.py": "from setuptools import setup\nsetup(name='widget')\n",
            "setupext.py": SETUPEXT,
            "mplsetup.cfg.template": TEMPLATE,
            ".github/workflows/tests.yml": GITHUB_WORKFLOW,
            "widget/__init__.py": "",
            "src/ft2font.cpp": "int x;",
        },
        "2022-05-01T10:00:00Z",
    )
    plan = plan_of(tmp_path, commit)
    assert plan.system_packages == [
        "graphviz", "libfreetype6-dev", "gfortran", "libfreetype-dev", "libpng-dev",
        "libqhull-dev",
    ]  # fmt: skip
    assert plan.system_left_out == {"texlive-latex-extra": "TeX"}
    assert len(plan.recipe.pre_install) == 2  # the packages, then the build options file
    text = plan.text()
    assert "system (apt): graphviz libfreetype6-dev" in text
    assert "build switch system_qhull = True in mplsetup.cfg" in text


def test_a_plan_without_system_packages_has_no_pre_install(tmp_path: Path) -> None:
    commit = make_repo(
        tmp_path,
        {
            "setup.py": "from setuptools import setup\nsetup(name='widget')\n",
            ".github/workflows/tests.yml": "jobs:\n  t:\n    steps:\n      - run: pytest\n",
            "widget/__init__.py": "",
        },
        "2022-05-01T10:00:00Z",
    )
    plan = plan_of(tmp_path, commit)
    assert plan.recipe.pre_install == [] and plan.system_packages == []
    assert "system (apt)" not in plan.text()


def _run_stubbed(tmp_path: Path, found: SystemPackages, apt_install: str) -> tuple[str, str]:
    """The install lines run by bash with apt stubbed: Debian has every package but
    ``missing``; ``apt_install`` is the stub apt-get install's body."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stubs = {
        "apt-get": f'echo "apt-get $*" >> "$LOG"\n[ "$1" = install ] || exit 0\n'
        f'( {apt_install} ) || exit 100\nshift 4; printf "%s\\n" "$@" >> "$LOG.ok"',
        "apt-cache": '[ "$2" != missing ]',
        "dpkg": 'grep -qx -- "$2" "$LOG.ok"',  # installed: by an install that succeeded
        "rm": "exit 0",
    }
    for name, text in stubs.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{text}\n")
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "calls.log"
    log.write_text("")
    (tmp_path / "calls.log.ok").write_text("")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "LOG": str(log)}
    done = subprocess.run(
        ["bash", "-ec", "\n".join(install_lines(found))],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, log.read_text()


def test_a_package_the_release_lacks_is_skipped_and_the_rest_install(tmp_path: Path) -> None:
    files = {"mplsetup.cfg.template": TEMPLATE, "setupext.py": SETUPEXT,
             ".travis.yml": "addons:\n  apt:\n    packages: [missing, graphviz]\n"}  # fmt: skip
    found = system_packages(sorted(files), files.get)
    # installing them together fails once (a conflict): one by one, and one fails
    out, calls = _run_stubbed(tmp_path, found, '[ $# -gt 5 ] && exit 100; [[ "$*" != *libqhull* ]]')
    assert "system package missing: not in this Debian release, skipped" in out
    assert "system package libqhull-dev does not install, skipped" in out
    assert "install -y -q --no-install-recommends graphviz libfreetype-dev" in calls
    # the switch of the package that installed is on; the other one's is not
    assert (tmp_path / "mplsetup.cfg").read_text() == "[libs]\nsystem_freetype = True\n"


def test_nothing_to_install_means_no_lines() -> None:
    assert install_lines(SystemPackages()) == []


@pytest.mark.container
def test_the_base_images_apt_installs_what_debian_has_and_skips_the_rest(
    docker_client, base_image
) -> None:
    found = SystemPackages(packages=["language-pack-de", "libqhull-dev"])
    script = "\n".join(install_lines(found)) + "\ndpkg -s libqhull-dev | grep -q installed"
    out = docker_client.containers.run(
        base_image, ["bash", "-ec", script], remove=True, stdout=True, stderr=True
    ).decode()
    assert "system package language-pack-de: not in this Debian release, skipped" in out


def test_a_scheduled_workflow_is_not_read() -> None:
    """Cron workflows test other configurations (development versions, other
    architectures), not the environment the tests run in."""
    text = "jobs:\n  t:\n    steps:\n      - run: apt-get install -y graphviz\n"
    files = {".github/workflows/ci_cron_weekly.yml": text, ".github/workflows/ci.yml": text}
    found = system_packages(sorted(files), files.get)
    assert found.packages == ["graphviz"] and found.sources == [".github/workflows/ci.yml"]


def test_what_the_base_images_have_is_not_installed_again() -> None:
    files = {".travis.yml": "addons:\n  apt:\n    packages: [tzdata, git, graphviz]\n"}
    found = system_packages(sorted(files), files.get)
    assert found.packages == ["graphviz"]
    assert found.left_out == {"tzdata": "in the base images", "git": "in the base images"}
