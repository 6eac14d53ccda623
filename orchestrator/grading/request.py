"""What one grading is asked to do: :class:`GradingRequest`, the options of phase 7's entry
(:func:`orchestrator.grading.grade`) as one typed, frozen value.

An option the model does not name is refused (``extra="forbid"``): ``GradingRequest(timout=1)``
raises :class:`pydantic.ValidationError`, and mypy sees the fields.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.context.successor import Fresh, Replicas, Successor
from orchestrator.grading.twins.model import TwinSet


class GradingRequest(BaseModel):
    """How to grade one patch (:func:`orchestrator.grading.grade`).

    The graded run (:func:`.evaluation.evaluate`): the tests run for at most ``timeout``
    seconds, as ``test_user`` (None: root) with the repository read-only to that user but
    for ``writable`` (where validation saw the gold run's tests write, :mod:`.script`);
    ``patch`` falls back to ``patch --fuzz=fuzz`` (:mod:`orchestrator.diffs.apply`);
    ``excluded_p2p``/``excluded_f2p``: the tests validation left out of grading; a patch
    that must be installed again is built in a container of its own and the tests run in a
    fresh one (``successor``; None: a patch that needs it is an error, :mod:`.reinstall`);
    ``log_dir``: where the logs go (None: none written); ``test_patch``: the tests' patch in
    place of the instance's (an impossible twin's).

    Then the tests that decided a verdict against the patch run again up to
    ``flaky_reruns`` times (:mod:`.flaky_reruns`). With impossible twins (``twins``:
    validation's, None when validation is off) the secret pair runs before the official
    run (:mod:`.twins.pair`), in ``pair_box`` (a container of the instance image, removed
    on leaving it), or, for a patch installed again, in fresh containers from the files of
    the one it was built in (``replicas``).

    Validation grades the benchmark's own gold patch (and the base) through the same entry,
    with options a participant's patch is never graded with: ``record`` (the repository
    writable to the tests, and where they wrote recorded), ``directives`` (these tests in
    place of the test files, :mod:`orchestrator.recipes.selection`), ``audit`` False (the
    patch's code not watched), ``tests_without_patch`` (the tests run with no patch: the tree
    as it is), ``reinstall_in_place`` (a reinstall in the grading container itself,
    unguarded), ``run_tests`` False (the patch applied and installed, no test run).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout: float = Field(gt=0)
    fuzz: int = Field(default=3, ge=0)
    excluded_p2p: tuple[str, ...] = ()
    excluded_f2p: tuple[str, ...] = ()
    log_dir: Path | None = None
    test_user: str | None = None
    writable: tuple[str, ...] = ()
    successor: Successor | None = None
    test_patch: str | None = None
    flaky_reruns: int = Field(default=0, ge=0)
    twins: TwinSet | None = None
    pair_box: Fresh | None = None
    replicas: Replicas | None = None
    # validation's (see above)
    record: bool = False
    directives: tuple[str, ...] | None = None
    audit: bool = True
    tests_without_patch: bool = False
    reinstall_in_place: bool = False
    run_tests: bool = True
