"""The twin as data: where in which test file one expected value is changed, and to what."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Twin(BaseModel):
    """One impossible twin: the FAIL_TO_PASS test ``test`` with the source segment
    ``[start, end)`` of ``path`` (the file as the test patch leaves it) replaced by
    ``replacement``; ``line`` is that segment's first line (1-based), ``original`` and
    ``mutated`` the lines the segment spans before and after, ``kind`` what was changed,
    ``function`` the test function it lives in (``Class.test_x``).

    Kinds: a constant of an expected value (``int``, ``float``, ``complex``, ``str``,
    ``bytes``, ``bool``), an empty container given an element (``container``), a list or
    tuple one element longer (``longer``), ``None`` compared with ``==`` or ``is`` (``none``),
    a named value (``name``: ``int`` -> ``float``, ``np.float64`` -> ``np.float32``,
    ``S.Integers`` -> ``S.Reals``, ``ExitCode.OK``), the class of ``isinstance`` (``class``),
    the exception or warning a test expects (``exception``) or its message (``match``), a
    bound made stricter than the gold value meets (``bound``: ``< 0`` -> ``< -5``), every
    member of a written-out container a value must be in (``member``), and, only for a test
    that states no value, the assertion turned around (``truth``)."""

    test: str
    path: str
    line: int
    start: int
    end: int
    replacement: str
    original: str
    mutated: str
    kind: str
    function: str = ""


class TwinCandidates(BaseModel):
    """What the generator proposes: per FAIL_TO_PASS test its candidate twins, the most
    natural first, and for each test without one the reason."""

    by_test: dict[str, list[Twin]] = Field(default_factory=dict)
    missing: dict[str, str] = Field(default_factory=dict)


class TwinSet(BaseModel):
    """What validation proved about an instance's twins: the effective ones, the test patch's
    files they change (``files``: after the test patch; ``base_files``: at the base commit,
    None where the test patch creates the file), and whether they ran with the FAIL_TO_PASS
    tests selected by name (``selected``; False: the whole test files, where the runner's
    selection did not answer): grading's secret pair runs them the same way."""

    twins: list[Twin] = Field(default_factory=list)
    files: dict[str, str] = Field(default_factory=dict)
    base_files: dict[str, str | None] = Field(default_factory=dict)
    selected: bool = True
