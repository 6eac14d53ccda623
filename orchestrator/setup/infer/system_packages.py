"""The Debian packages an inferred environment installs, read as data from the repository's
own files (pure functions of their text; nothing runs on the host):

- the ``apt-get install`` / ``apt install`` commands of its CI (GitHub workflows,
  ``.travis.yml`` with its ``addons: apt: packages`` lists, ``azure-pipelines.yml``), in
  jobs that are not documentation, lint, release or benchmark jobs, nor in scheduled
  workflows (``ci_cron_weekly.yml``: other configurations) (:func:`ci_apt_packages`);
- the libraries a setup script asks ``pkg-config`` for (``'freetype2'`` -> Debian's
  ``libfreetype-dev``);
- the ``system_<library>`` build switches a project documents in a build options template
  (``mplsetup.cfg.template``: ``#system_freetype = False``): the options file the template
  describes is written with the switch on, so the build links Debian's library instead of
  downloading its own copy (hosts other than PyPI and Debian are out of reach).

Left out: what no test needs and is large (TeX, document converters, Java, GUI toolkits and
X, media and image tools, debuggers and CI tooling) and Python modules of Debian's own
Python (the tests run in the environment's). Whether a package exists in the base image's
Debian release (bullseye, bookworm) is decided in the container: a package it lacks
(Ubuntu's ``language-pack-de``) is skipped, and the log says so.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterator

import yaml
from pydantic import BaseModel, Field

from orchestrator.setup.images import PACKAGES

# CircleCI is left out: the projects that have it build their documentation there, in
# reusable commands no job name marks as such
CI_FILES = re.compile(r"^(\.github/workflows/[^/]+\.ya?ml|\.travis\.yml|azure-pipelines\.yml)$")
# jobs, steps and workflows that do not run the tests (by file name, key, name, stage, env
# or condition)
NOT_TEST_JOBS = re.compile(
    r"doc(?!test)|sphinx|linkcheck|lint|pre-?commit|deploy|release|publish|wheel|sdist|"
    r"benchmark|\basv\b",
    re.IGNORECASE,
)
# scheduled workflows: other configurations (development versions, other architectures)
SCHEDULED = re.compile(r"cron|nightl|daily|weekly|upstream", re.IGNORECASE)
# what every base image has: its packages and what they bring (the compilers of
# build-essential; tzdata)
IN_BASE_IMAGES = frozenset(PACKAGES) | {"gcc", "g++", "make", "libc6-dev", "dpkg-dev", "tzdata"}
# what no test needs and costs minutes to install, by reason
LEFT_OUT = {
    "TeX": re.compile(r"^(texlive.*|cm-super|lmodern|latexmk|dvipng|dvisvgm|tex-.*|.*-latex-.*)$"),
    "a document converter": re.compile(
        r"^(pandoc.*|inkscape|doxygen.*|librsvg2-bin|asciidoc.*|docbook.*|xsltproc)$"
    ),
    "a web browser": re.compile(r"^(chromium.*|firefox.*|google-chrome.*)$"),
    "a large font collection": re.compile(r"^(fonts-noto.*|fonts-cjk.*)$"),
    "Java": re.compile(r"^(default-j(re|dk).*|openjdk-.*|antlr.*|maven|ant)$"),
    "a GUI toolkit or X": re.compile(
        r"^(.*qt[0-9]?.*|.*gtk.*|gir1\.2-.*|libgirepository.*|libxcb.*|libxkbcommon.*|"
        r"libsdl.*|libopengl.*|libgl1.*|libegl.*|xvfb|xauth|x11-.*|xserver-.*|.*-tk|tk-dev|"
        r"libwx.*|dbus.*|libnotify.*)$"
    ),
    "a media tool": re.compile(r"^(ffmpeg|libav.*|imagemagick.*|gstreamer.*)$"),
    "CI tooling": re.compile(
        r"^(ccache|gdb|lcov|valgrind|git|curl|wget|sudo|software-properties-common|"
        r"apt-transport-https|ca-certificates|gnupg.*|"
        r"build-essential|tox|nodejs|npm|yarn|sagemath.*)$"
    ),
    "Ubuntu's, not Debian's": re.compile(r"^(language-pack-.*|ubuntu-.*)$"),
    "Debian's own Python": re.compile(r"^(python[0-9.]*|python[0-9]?-.*|pypy.*|cython3?)$"),
}
# what serves a build: kept for a project that compiles extensions (its requirements come
# as wheels; the CI's libraries serve requirements built from source, optional ones)
BUILD_ONLY = re.compile(
    r"^(lib.*|.*-dev|gcc.*|g\+\+.*|gfortran.*|clang.*|cmake|ninja-build|meson|swig.*|"
    r"pkg-config|pkgconf|autoconf|automake|libtool|make|build-essential)$"
)
NO_BUILD = "a library or build tool, and the project compiles no extensions"
# pkg-config module -> the Debian development package that provides it
PKG_CONFIG_MODULES = {
    "freetype2": "libfreetype-dev", "libpng": "libpng-dev", "zlib": "zlib1g-dev",
    "libffi": "libffi-dev", "libxml-2.0": "libxml2-dev", "libxslt": "libxslt1-dev",
    "libjpeg": "libjpeg-dev", "cairo": "libcairo2-dev", "hdf5": "libhdf5-dev",
    "fftw3": "libfftw3-dev", "gsl": "libgsl-dev", "yaml-0.1": "libyaml-dev",
    "libzmq": "libzmq3-dev", "openssl": "libssl-dev", "sqlite3": "libsqlite3-dev",
    "expat": "libexpat1-dev", "proj": "libproj-dev", "openblas": "libopenblas-dev",
}  # fmt: skip
# a build switch's library (system_<library>) -> the Debian development package
SWITCH_LIBRARIES = {
    "freetype": "libfreetype-dev", "qhull": "libqhull-dev", "png": "libpng-dev",
    "zlib": "zlib1g-dev", "libpng": "libpng-dev", "jpeg": "libjpeg-dev",
}  # fmt: skip
SETUP_SCRIPTS = re.compile(r"^setup[^/]*\.py$")
TEMPLATE = re.compile(r"^([^/]+\.cfg)\.template$")
# a build switch a template documents, commented out at its default: "#system_freetype = False"
SWITCH = re.compile(r"^#\s*(system_([A-Za-z0-9_]+))\s*=\s*False\s*$", re.MULTILINE)
DEBIAN_NAME = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
_EXPRESSION = re.compile(r"\$\{\{.*?\}\}")
_SEPARATORS = re.compile(r"&&|\|\||[;|\n]")
_PREFIXES = ("sudo", "env", "time", "nohup", "exec", "command")
_APT_OPTIONS_WITH_VALUE = ("-o", "-t", "-c", "--option", "--target-release", "--config-file")


class BuildSwitch(BaseModel):
    """A build option the project documents in a template, turned on in the options file
    the template describes when the Debian package it links is installed."""

    file: str  # the options file, relative to the checkout ("mplsetup.cfg")
    section: str
    option: str
    package: str


class SystemPackages(BaseModel):
    """The Debian packages to install, what was left out and why, and the build switches."""

    packages: list[str] = Field(default_factory=list)
    left_out: dict[str, str] = Field(default_factory=dict)  # package -> reason
    switches: list[BuildSwitch] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)


def system_packages(paths: list[str], read: Callable[[str], str | None]) -> SystemPackages:
    """The Debian packages the repository's CI installs for its tests (its libraries and
    build tools only when the project compiles extensions), the libraries its setup
    scripts ask pkg-config for, and those of the build switches it documents."""
    found = SystemPackages()
    wanted = _from_ci(paths, read, found)  # package -> where it comes from
    for path in paths:
        if SETUP_SCRIPTS.match(path):
            for package in pkg_config_packages(read(path) or ""):
                wanted.setdefault(package, path)
    for path in paths:
        if (match := TEMPLATE.match(path)) is not None:
            for switch in build_switches(match.group(1), read(path) or ""):
                found.switches.append(switch)
                wanted.setdefault(switch.package, path)
    for package, source in wanted.items():
        reason = left_out_because(package)
        if reason:
            found.left_out.setdefault(package, reason)
        else:
            found.packages.append(package)
            found.sources.append(source)
    found.sources = list(dict.fromkeys(found.sources))
    found.reasons = _reasons(found)
    return found


def _from_ci(
    paths: list[str], read: Callable[[str], str | None], found: SystemPackages
) -> dict[str, str]:
    """The CI's packages for the tests, by the file that installs them; the libraries and
    build tools of a project that compiles no extensions go to ``found.left_out``."""
    compiles = compiles_extensions(paths, read)
    wanted: dict[str, str] = {}
    for path in paths:
        name = path.rsplit("/", 1)[-1]
        if CI_FILES.match(path) and not NOT_TEST_JOBS.search(name) and not SCHEDULED.search(name):
            for package in ci_apt_packages(read(path) or ""):
                if compiles or not BUILD_ONLY.match(package):
                    wanted.setdefault(package, path)
                elif left_out_because(package) == "":
                    found.left_out.setdefault(package, NO_BUILD)
    return wanted


def _reasons(found: SystemPackages) -> list[str]:
    reasons: list[str] = []
    if found.packages:
        reasons.append(
            f"system packages: {' '.join(found.packages)} (from {', '.join(found.sources)}); "
            "those the base image's Debian release lacks are skipped"
        )
    by_reason: dict[str, list[str]] = {}
    for package, reason in found.left_out.items():
        by_reason.setdefault(reason, []).append(package)
    if by_reason:
        reasons.append(
            "system packages left out: "
            + "; ".join(f"{' '.join(names)} ({why})" for why, names in by_reason.items())
        )
    reasons += [
        f"build switch {switch.option} = True in {switch.file} (documented in "
        f"{switch.file}.template): the build links Debian's {switch.package} instead of "
        "downloading its own"
        for switch in found.switches
    ]
    return reasons


def compiles_extensions(paths: list[str], read: Callable[[str], str | None]) -> bool:
    """Whether the project builds compiled extensions (C, C++ or Cython sources, or an
    ``Extension(`` in its setup.py)."""
    if any(p.endswith((".pyx", ".c", ".cpp")) for p in paths):
        return True
    return "setup.py" in paths and "Extension(" in (read("setup.py") or "")


def left_out_because(package: str) -> str:
    """Why a package is not installed ("" when it is)."""
    if package in IN_BASE_IMAGES:
        return "in the base images"
    for reason, pattern in LEFT_OUT.items():
        if pattern.match(package):
            return reason
    return ""


# --------------------------------------------------------------------------- CI files


def ci_apt_packages(text: str) -> list[str]:
    """The packages a CI file's test jobs install with apt: its shell commands
    (``sudo apt-get install -y ...``, line continuations, ``${{ ... }}`` expressions and
    ``$VARIABLES`` skipped) and Travis' ``addons: apt: packages`` lists."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        data = text
    found: dict[str, None] = {}
    for command in _commands(data):
        for package in apt_installs(command):
            found.setdefault(package, None)
    return list(found)


def _label(node: dict[object, object]) -> str:
    """What names a job or step: its name, job, stage and env entries, and a step's
    condition (a job's says when it runs: on which events, labels, paths)."""
    parts: list[str] = []
    for key in ("name", "job", "stage", "env", "if" if "run" in node else ""):
        value = node.get(key)
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, list):
            parts += [item for item in value if isinstance(item, str)]
        elif isinstance(value, dict):
            parts += [f"{k}={v}" for k, v in value.items() if isinstance(v, str)]
    return " ".join(parts)


def _commands(node: object) -> Iterator[str]:
    """The shell text of a CI file's jobs that run tests."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for item in node:
            yield from _commands(item)
    elif isinstance(node, dict):
        if NOT_TEST_JOBS.search(_label(node)):
            return
        for key, value in node.items():
            if NOT_TEST_JOBS.search(str(key)) and isinstance(value, dict | list):
                continue
            if key == "apt" and isinstance(value, dict):  # Travis: addons: apt: packages:
                listed = value.get("packages")
                if isinstance(listed, list):
                    names = [str(item) for item in listed if isinstance(item, str)]
                    yield "apt-get install " + " ".join(names)
                continue
            if key == "apt_packages" and isinstance(value, list):
                yield "apt-get install " + " ".join(str(item) for item in value)
                continue
            yield from _commands(value)


def apt_installs(command: str) -> list[str]:
    """The packages of every ``apt-get install`` / ``apt install`` in shell text."""
    text = _EXPRESSION.sub(" ", command.replace("\\\n", " "))
    found: list[str] = []
    for part in _SEPARATORS.split(text):
        try:
            words = shlex.split(part, comments=True)
        except ValueError:
            words = part.split()
        found += _install_words(words)
    return found


def _install_words(words: list[str]) -> list[str]:
    index = 0
    while index < len(words) and (
        words[index] in _PREFIXES or words[index].startswith("-") or "=" in words[index]
    ):
        index += 1  # sudo -E, env, VARIABLE=value
    if index == len(words) or words[index].rsplit("/", 1)[-1] not in ("apt-get", "apt"):
        return []
    rest = words[index + 1 :]
    found: list[str] = []
    seen_install, skip_next = False, False
    for word in rest:
        if skip_next:
            skip_next = False
        elif word.startswith("-"):
            skip_next = word in _APT_OPTIONS_WITH_VALUE
        elif not seen_install:
            if word != "install":
                return []
            seen_install = True
        else:
            name = word.split("=", 1)[0].split(":", 1)[0]  # pkg=version, pkg:arch
            if DEBIAN_NAME.match(name):
                found.append(name)
    return found


# --------------------------------------------------------------------------- setup scripts


def pkg_config_packages(text: str) -> list[str]:
    """The Debian development packages of the libraries a setup script asks pkg-config for
    (quoted module names it passes, in a script that uses pkg-config)."""
    if not re.search(r"pkg.?config", text, re.IGNORECASE):
        return []
    found: dict[str, None] = {}
    for name in re.findall(r"""["']([A-Za-z0-9_.+-]+)["']""", text):
        if name in PKG_CONFIG_MODULES:
            found.setdefault(PKG_CONFIG_MODULES[name], None)
    return list(found)


def build_switches(file: str, text: str) -> list[BuildSwitch]:
    """The ``system_<library>`` switches a build options template documents, for the
    libraries Debian packages."""
    found: list[BuildSwitch] = []
    section = ""
    for line in text.splitlines():
        if header := re.match(r"^\[([^\]]+)\]\s*$", line):
            section = header.group(1)
            continue
        match = SWITCH.match(line)
        library = match.group(2).lower() if match else ""
        if match and section and library in SWITCH_LIBRARIES:
            found.append(
                BuildSwitch(
                    file=file,
                    section=section,
                    option=match.group(1),
                    package=SWITCH_LIBRARIES[library],
                )
            )
    return found


# --------------------------------------------------------------------------- install


def install_lines(found: SystemPackages) -> list[str]:
    """Bash (a recipe's pre-install) that installs the packages the base image's Debian
    release has, without their recommendations, skipping (and naming) those it lacks or
    that do not install; then writes the build switches whose package is installed. Nothing
    here fails the set-up: validation decides whether the tests needed a package."""
    if not found.packages:
        return []
    wanted = " ".join(shlex.quote(p) for p in found.packages)
    lines = [
        f"""export DEBIAN_FRONTEND=noninteractive
system=({wanted})
have=()
if apt-get update -qq; then
  for p in "${{system[@]}}"; do
    if apt-cache show "$p" >/dev/null 2>&1; then have+=("$p")
    else echo ">>> system package $p: not in this Debian release, skipped"; fi
  done
else
  echo ">>> apt-get update failed: no system packages"
fi
if [ ${{#have[@]}} -gt 0 ] && ! apt-get install -y -q --no-install-recommends "${{have[@]}}"; then
  for p in "${{have[@]}}"; do
    apt-get install -y -q --no-install-recommends "$p" \\
      || echo ">>> system package $p does not install, skipped"
  done
fi
rm -rf /var/lib/apt/lists/*"""
    ]
    grouped: dict[tuple[str, str], list[BuildSwitch]] = {}
    for switch in found.switches:
        grouped.setdefault((switch.file, switch.section), []).append(switch)
    for (file, section), switches in grouped.items():
        on = [
            f"if dpkg -s {shlex.quote(s.package)} >/dev/null 2>&1; then "
            f"options+=({shlex.quote(f'{s.option} = True')}); fi"
            for s in switches
        ]
        target = shlex.quote(file)
        lines.append(
            "\n".join(
                [
                    "options=()",
                    *on,
                    f"if [ ${{#options[@]}} -gt 0 ] && [ ! -e {target} ]; then",
                    f"  printf '[%s]\\n' {shlex.quote(section)} > {target}",
                    f"  printf '%s\\n' \"${{options[@]}}\" >> {target}",
                    f'  echo ">>> build options in {file}:"; cat {target}',
                    "fi",
                ]
            )
        )
    return lines
