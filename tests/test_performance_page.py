"""The Performance page states no figure of its own: every number on it is in an output that
``scripts/bench-record`` wrote into ``docs/bench/`` (headed by the command, the date and the
host); the deployment pages show the same outputs; the outputs name no machine's
directories."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = ["performance.md", "deployment/ray.md", "deployment/registry.md"]
INCLUDE = re.compile(r'^--8<-- "(?P<path>[^"]+)"$', re.MULTILINE)
HEADER_COMMAND = re.compile(r"^# python bench/(?P<name>\w+)\.py( .*)?$")
HEADER_HOST = re.compile(r"^# \d{4}-\d\d-\d\dT\d\d:\d\dZ, \d+ cores, \d+ GB, load at the start ")
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")
# the words of a page that are names, not figures: Python and Docker versions, the phases
NAMES = re.compile(r"py3\.\d+|3\.\d+|phases? \d(?:[–-]\d)?|\bbench/\w+\.py|[\w-]+\.txt")


def _includes(page: str) -> list[Path]:
    return [DOCS / m["path"] for m in INCLUDE.finditer((DOCS / page).read_text())]


def _prose(page: str) -> str:
    """The page without its fenced blocks (the included outputs and commands)."""
    return re.sub(r"^```.*?^```$", "", (DOCS / page).read_text(), flags=re.MULTILINE | re.DOTALL)


def test_every_output_is_a_recorded_bench_run() -> None:
    outputs = sorted((DOCS / "bench").glob("*.txt"))
    assert outputs, "docs/bench holds no recorded output"
    included = {path for page in PAGES for path in _includes(page)}
    for output in outputs:
        first, second, *_ = output.read_text().splitlines()
        command = HEADER_COMMAND.match(first)
        assert command and command["name"] == output.stem, f"{output.name}: {first!r}"
        assert (ROOT / "bench" / f"{command['name']}.py").is_file(), first
        assert HEADER_HOST.match(second), f"{output.name}: {second!r}"
        assert output in included, f"{output.name} is on no page"


@pytest.mark.parametrize(
    ("page", "output"),
    [("deployment/ray.md", "ray_scaleout.txt"), ("deployment/registry.md", "registry.txt")],
)
def test_a_deployment_page_shows_the_recorded_output(page: str, output: str) -> None:
    assert DOCS / "bench" / output in _includes(page)
    assert "| wall |" not in _prose(page) and "| push s |" not in _prose(page)  # no copies


def test_the_performance_page_quotes_only_recorded_figures() -> None:
    """A number in the prose of the page is in one of the outputs it includes."""
    page = "performance.md"
    outputs = _includes(page)
    assert outputs, f"{page} includes no recorded output"
    for output in outputs:
        assert output.is_file() and output.parent == DOCS / "bench", output
    recorded = {n for output in outputs for n in NUMBER.findall(output.read_text())}
    prose = NAMES.sub(" ", _prose(page))
    unrecorded = sorted({n for n in NUMBER.findall(prose) if n not in recorded})
    assert not unrecorded, f"{page} quotes figures no included output holds: {unrecorded}"


def test_the_outputs_name_no_host_directory() -> None:
    for output in (DOCS / "bench").glob("*.txt"):
        text = output.read_text()
        assert str(ROOT) not in text, output.name
        assert not re.search(r"(?<![\w$])/(?:home|root|work|Users)/", text), output.name
