"""How many instances the impossible-twin generator covers, read statically from the real
dataset: for each instance of a repository with a bare mirror, its test files at the base
commit (``git show BASE:path``), the test patch applied with real ``git apply``, then
:func:`orchestrator.grading.twins.generate.twin_candidates` on them. Per repository: the
instances with a candidate for at least one FAIL_TO_PASS test, the tests with a candidate,
and why the others have none. Every first candidate's twin test patch is applied with
``git apply`` too, and must leave the files :func:`apply_twins` gives.

Which candidates the gold patch really fails is validation's question (it runs them); this
counts what there is to run.

Run: python bench/twin_coverage.py [--mirror-dir DIR] [--dataset JSONL] [--show-missing N]
(defaults: $SWE_GREEN_MIRROR_DIR and $SWE_GREEN_DATASET); ``--smoke``: the synthetic
instances (seconds).
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from orchestrator.diffs.diff import GIT_STARTS, Patch
from orchestrator.grading.twins.generate import apply_twins, twin_candidates, twin_test_patch
from orchestrator.grading.twins.model import Twin
from orchestrator.models import Instance


def _git(*args: str, cwd: Path | None = None, stdin: str | None = None) -> tuple[int, str]:
    """git's exit status and output, its line endings kept (CRLF stays CRLF)."""
    data = stdin.encode("utf-8", "surrogateescape") if stdin is not None else None
    done = subprocess.run(["git", *args], cwd=cwd, input=data, capture_output=True, check=False)
    return done.returncode, done.stdout.decode("utf-8", "surrogateescape")


def base_files(mirror: Path, instance: Instance) -> dict[str, str | None]:
    """The texts at the base commit of the files the test patch touches (None: absent)."""
    out: dict[str, str | None] = {}
    for section in Patch.parse(instance.test_patch, GIT_STARTS).files:
        for path in section.paths:
            status, text = _git("--git-dir", str(mirror), "show", f"{instance.base_commit}:{path}")
            out[path] = text if status == 0 else None
    return out


def applied(base: dict[str, str | None], patch: str) -> dict[str, str] | None:
    """The files after ``git apply patch`` on ``base`` (a scratch directory); None when git
    refuses the patch."""
    with tempfile.TemporaryDirectory(prefix="swe-green-twins-") as tmp:
        root = Path(tmp)
        for path, text in base.items():
            if text is not None:
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_bytes(text.encode("utf-8", "surrogateescape"))
        _git("init", "-q", cwd=root)
        if _git("apply", "--whitespace=nowarn", "-", cwd=root, stdin=patch)[0] != 0:
            return None
        out = {}
        for path in base:
            file = root / path
            if file.is_file():
                out[path] = file.read_bytes().decode("utf-8", "surrogateescape")
        return out


def measure(mirror_dir: Path, dataset: Path, show_missing: int) -> None:
    rows = [Instance.model_validate_json(line) for line in dataset.open() if line.strip()]
    by_repo: dict[str, list[Instance]] = collections.defaultdict(list)
    for row in rows:
        by_repo[row.repo].append(row)
    absent = sorted(
        repo for repo in by_repo if not (mirror_dir / f"{repo.replace('/', '__')}.git").is_dir()
    )
    stats: dict[str, collections.Counter[str]] = {}
    reasons: collections.Counter[str] = collections.Counter()
    kinds: collections.Counter[str] = collections.Counter()
    uncovered: list[str] = []
    examples: list[str] = []
    for repo in sorted(r for r in by_repo if r not in absent):
        count = stats.setdefault(repo, collections.Counter())
        for instance in by_repo[repo]:
            mirror = mirror_dir / f"{instance.owner_name}.git"
            base = base_files(mirror, instance)
            files = applied(base, instance.test_patch)
            count["instances"] += 1
            count["tests"] += len(instance.FAIL_TO_PASS)
            if files is None:
                count["test patch refused"] += 1
                continue
            candidates = twin_candidates(instance, files)
            count["tests covered"] += len(candidates.by_test)
            count["candidates"] += sum(len(t) for t in candidates.by_test.values())
            for twins in candidates.by_test.values():
                kinds.update(twin.kind for twin in twins)
            for name, reason in candidates.missing.items():
                reasons[reason] += 1
                if len(uncovered) < show_missing:
                    uncovered.append(f"  {instance.instance_id} {name}: {reason}")
            if not candidates.by_test:
                continue
            count["instances covered"] += 1
            if any(t.kind != "truth" for twins in candidates.by_test.values() for t in twins):
                count["by a value"] += 1
            twin = next(iter(candidates.by_test.values()))[0]
            if len(examples) < 12 and count["instances covered"] <= 2:
                examples.append(_example(instance, twin))
            together = _apart([twins[0] for twins in candidates.by_test.values()])
            patch = twin_test_patch(instance.test_patch, base, together, files)
            if applied(base, patch) == apply_twins(files, together):
                count["twin patches applied"] += 1
            else:
                count["twin patches failed"] += 1
                print(f"twin patch failed: {instance.instance_id}", file=sys.stderr)
    _report(stats, reasons, kinds, absent, by_repo, uncovered, examples)


def _apart(twins: list[Twin]) -> list[Twin]:
    """The twins whose segments do not overlap (the first of any that do)."""
    kept: list[Twin] = []
    for twin in twins:
        if all(t.path != twin.path or t.end <= twin.start or twin.end <= t.start for t in kept):
            kept.append(twin)
    return kept


def _example(instance: Instance, twin: Twin) -> str:
    return (
        f"  {instance.instance_id} {twin.path}:{twin.line} ({twin.kind})\n"
        f"    - {twin.original.strip()}\n    + {twin.mutated.strip()}"
    )


def _report(
    stats: dict[str, collections.Counter[str]], reasons: collections.Counter[str],
    kinds: collections.Counter[str], absent: list[str], by_repo: dict[str, list[Instance]],
    uncovered: list[str], examples: list[str],
) -> None:  # fmt: skip
    print(f"{'':32} {'with a candidate':^17} {'':9} {'with a':>9}")
    print(f"{'repository':22} {'instances':>9} {'any':>8} {'a value':>8} {'F2P tests':>9} "
          f"{'candidate':>9} {'candidates':>10} {'patches ok':>10}")  # fmt: skip
    total: collections.Counter[str] = collections.Counter()
    for repo, count in stats.items():
        total.update(count)
        _row(repo, count)
    _row("all", total)
    share = 100 * total["instances covered"] / max(total["instances"], 1)
    value = 100 * total["by a value"] / max(total["instances"], 1)
    print(
        f"\ninstances with a candidate twin: {total['instances covered']} of "
        f"{total['instances']} ({share:.0f} %), with one that changes a value (not only an "
        f"assertion turned around, kind 'truth'): {total['by a value']} ({value:.0f} %)"
    )
    print(f"test patches git refused: {total['test patch refused']}; twin patches (the first "
          f"candidate of every test at once) git refused or that left other files than "
          f"apply_twins: {total['twin patches failed']}")  # fmt: skip
    print("\nwhy a FAIL_TO_PASS test has no candidate (tests):")
    for reason, n in reasons.most_common():
        print(f"  {n:5d}  {reason}")
    print("\nwhat the candidates change (kinds):")
    print("  " + ", ".join(f"{kind} {n}" for kind, n in kinds.most_common()))
    if absent:
        n = sum(len(by_repo[r]) for r in absent)
        print(f"\nno mirror, not counted ({n} instances): {', '.join(absent)}")
    if examples:
        print("\nexamples (the first candidate):")
        print("\n".join(examples))
    if uncovered:
        print("\nFAIL_TO_PASS tests without a candidate:")
        print("\n".join(uncovered))


def _row(repo: str, count: collections.Counter[str]) -> None:
    print(f"{repo:22} {count['instances']:9d} {count['instances covered']:8d} "
          f"{count['by a value']:8d} {count['tests']:9d} {count['tests covered']:9d} "
          f"{count['candidates']:10d} {count['twin patches applied']:10d}")  # fmt: skip


def smoke() -> None:
    from orchestrator.dataset.synthetic import build_synthetic  # noqa: PLC0415 smoke only

    with tempfile.TemporaryDirectory(prefix="swe-green-bench-") as tmp:
        synth = build_synthetic(Path(tmp) / "synth")
        measure(synth / "mirrors", synth / "instances.jsonl", show_missing=5)


def data_parser(doc: str) -> argparse.ArgumentParser:
    """A parser with ``--mirror-dir`` and ``--dataset`` (defaults: the settings) and
    ``--smoke``."""
    parser = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mirror-dir", type=Path, default=os.environ.get("SWE_GREEN_MIRROR_DIR"))
    parser.add_argument("--dataset", type=Path, default=os.environ.get("SWE_GREEN_DATASET"))
    parser.add_argument("--smoke", action="store_true", help="the synthetic instances, seconds")
    return parser


def data_given(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Stops with one message when the mirrors or the dataset are not given."""
    if args.mirror_dir is None or args.dataset is None:
        parser.error("give --mirror-dir and --dataset (or SWE_GREEN_MIRROR_DIR, SWE_GREEN_DATASET)")
    if not args.mirror_dir.is_dir():
        parser.error(f"no directory {args.mirror_dir}: give --mirror-dir")


def main() -> None:
    parser = data_parser(__doc__ or "")
    parser.add_argument("--show-missing", type=int, default=0, metavar="N",
                        help="list the first N tests without a candidate")  # fmt: skip
    args = parser.parse_args()
    if args.smoke:
        smoke()
        return
    data_given(parser, args)
    measure(args.mirror_dir, args.dataset, args.show_missing)


if __name__ == "__main__":
    main()
