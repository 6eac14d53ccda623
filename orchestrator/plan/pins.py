"""The pins of an environment: the build constraints every pip call gets, and build-tool
pins raised to what runs on the Python the environment really has (pure functions; the
install's pins step, :func:`.install.pins_step`, uses them)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

# newest setuptools that isolated builds may use: later ones dropped what old setup.py files
# rely on (`setup.py develop` re-entering pip, setup_requires, ...)
SETUPTOOLS_CAP = "75.1.0"


def build_constraints(pins: list[str], build_setuptools: str = "") -> str:
    """The constraints file for every pip call of the environment (isolated builds too):
    setuptools no newer than ``SETUPTOOLS_CAP``, or than the recipe's own pin when that is
    newer. (An older pin is not a cap: pylint 3.0's frozen environment pins setuptools 41.6
    while its pyproject.toml needs >= 66.1 to build.) ``build_setuptools``: the setuptools
    requirement of the repository's declared build requirements that admits nothing up to
    the cap (:func:`newer_setuptools`); it is the constraint instead, the repository's own
    demand winning over the default cap."""
    if build_setuptools:
        return f"{build_setuptools}\n"
    cap = SETUPTOOLS_CAP
    for pin in pins:
        name, _, version = pin.partition("==")
        if name.strip().lower() == "setuptools" and version:
            if _version_key(version) > _version_key(cap):
                cap = version.strip()
    return f"setuptools<={cap}\n"


def newer_setuptools(build_requires: Sequence[str], cap: str = SETUPTOOLS_CAP) -> str:
    """The setuptools requirement of ``build_requires`` that admits no release up to ``cap``
    (a lower bound above it: ``setuptools>=77``), without its markers; else ""."""
    for text in build_requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) == "setuptools" and any(
            _above(spec.operator, spec.version, Version(cap)) for spec in req.specifier
        ):
            return f"setuptools{req.specifier}"
    return ""


def _above(operator: str, version: str, cap: Version) -> bool:
    """Whether one specifier clause excludes every release up to ``cap``."""
    try:
        bound = Version(version.removesuffix(".*"))
    except InvalidVersion:
        return False
    if operator == ">":
        return bound >= cap
    return operator in (">=", "==", "===", "~=") and bound > cap


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


# The oldest release of a build tool that runs on a Python (measured on the base images:
# setuptools < 41.1 calls HTMLParser.unescape, gone in 3.9; < 66.1 needs pkgutil.ImpImporter
# and distutils, gone in 3.12). A recipe's pin older than that was made for the spec's older
# Python: on a stand-in it is raised to the floor, and the set-up log says so.
BUILD_TOOL_FLOORS: dict[str, list[tuple[tuple[int, int], str]]] = {
    "setuptools": [((3, 9), "41.1.0"), ((3, 12), "66.1.0")],
}


def raise_pins(pins: list[str], python: tuple[int, int]) -> tuple[list[str], list[str]]:
    """``pins`` with each build-tool pin older than what runs on ``python`` raised to the
    oldest release that does, and one line per raised pin saying so."""
    raised, notes = [], []
    for pin in pins:
        name, _, version = pin.partition("==")
        floors = BUILD_TOOL_FLOORS.get(name.strip().lower(), [])
        floor = max((v for since, v in floors if python >= since), key=_version_key, default="")
        if floor and version and _version_key(version) < _version_key(floor):
            notes.append(
                f"pin {pin} raised to {name}=={floor}: the oldest that runs on Python "
                f"{python[0]}.{python[1]}"
            )
            pin = f"{name}=={floor}"
        raised.append(pin)
    return raised, notes


def _quoted(words: list[str]) -> str:
    return " ".join(shlex.quote(w) for w in words)


def pins_for_python(pins: list[str]) -> str:
    """Bash setting ``pins``: the recipe's pins, raised (:func:`raise_pins`) for the Python
    the virtual environment runs, known only at run time (the spec's, or a stand-in)."""
    lines = [
        """py=$(python -c "import sys; print('%d%03d' % sys.version_info[:2])" 2>/dev/null)""",
        f"pins=({_quoted(pins)})",
    ]
    branches = []
    for since in sorted({s for floors in BUILD_TOOL_FLOORS.values() for s, _ in floors})[::-1]:
        raised, notes = raise_pins(pins, since)
        if notes:
            changes = [
                f"pins[{i}]={shlex.quote(new)}" for i, new in enumerate(raised) if new != pins[i]
            ]
            changes += [f"echo {shlex.quote(note)}" for note in notes]
            branches.append(
                f'[ "${{py:-0}}" -ge {since[0]}{since[1]:03d} ]; then\n  ' + "; ".join(changes)
            )
    if branches:
        lines.append("if " + "\nelif ".join(branches) + "\nfi")
    return "\n".join(lines)
