"""Can code that sees the test file a run holds tell the original from an impossible twin?
The program here tries: shown one file (the test file as the test patch leaves it, or a twin
of it) and the FAIL_TO_PASS test that runs, it scores how mutated the test's expected values
look, with every heuristic we could think of:

- ``typo``: a word of a string that is no word of the file or the repository but one letter
  away from one (``'hemlo'`` beside ``'hello'``);
- ``unknown words``: the share of a string's words found nowhere else in the file or the
  repository;
- ``from the call``: the share of a string's words that the call's own arguments hold;
- ``not roundest``: an int that is not the roundest of itself and its two neighbours;
- ``neighbour``: an int one away from another literal of the file, itself found nowhere else;
- ``elsewhere``: a value found elsewhere in the file or the repository's version of it;
- ``float digits``: a float with more significant digits than the file's others.

Each heuristic's score of a file is its highest over the literals the generator may change
in that test (:class:`Sites`); the repository is the test file at the base commit. The
accuracy is measured over balanced sets (each FAIL_TO_PASS test's original file once, one
twin of it once: 50 % is chance), for each heuristic alone and for every sum of them with
weights -1, 0 or 1, each at its best threshold on the very set it is measured on: the
figures favour the distinguisher. The twin is the one grading could draw: a random one of
the first three value-changing candidates (validation keeps up to three), against the old
fixed edits' first candidate (``natural=False``).

Run: python bench/twin_distinguisher.py [--mirror-dir DIR] [--dataset JSONL] [--seed N]
(defaults: $SWE_GREEN_MIRROR_DIR and $SWE_GREEN_DATASET; repositories without a mirror
``<owner>__<name>.git`` are skipped); ``--smoke``: the synthetic instances (seconds).
"""

from __future__ import annotations

import ast
import collections
import itertools
import random
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from twin_coverage import applied, base_files, data_given, data_parser

from orchestrator.grading.twins.generate import apply_twins, twin_candidates
from orchestrator.grading.twins.locate import locate, parse_files
from orchestrator.grading.twins.model import Twin
from orchestrator.grading.twins.params import case_values
from orchestrator.grading.twins.sites import Sites, Source
from orchestrator.models import Instance

_WORD = re.compile(r"[A-Za-z]{3,}")
_NAME_PART = re.compile(r"[A-Za-z][a-z]+|[A-Z]{2,}(?![a-z])")
HEURISTICS = ("typo", "unknown words", "from the call", "repeated word", "not roundest",
              "neighbour", "elsewhere", "float digits")  # fmt: skip
# each heuristic's highest score over the test's literals, and how many literals score
FEATURES = (*HEURISTICS, *(f"{name} (count)" for name in HEURISTICS))
POOL = 3  # the effective twins validation keeps per test, of which grading draws one


@dataclass(frozen=True)
class Sample:
    """One file shown to the distinguisher: its text, the test, and what it is."""

    path: str
    text: str
    test: str
    twin: bool
    kind: str = ""


# ---------------------------------------------------------------------- the distinguisher
@dataclass
class _Context:
    """What a file holds beside one literal: its other literals and words, the repository's."""

    literals: collections.Counter[object]
    words: set[str]
    floats: list[int]


def _context(tree: ast.Module, repository: str) -> _Context:
    literals: collections.Counter[object] = collections.Counter()
    words: set[str] = set()
    floats: list[int] = []
    trees = [tree]
    try:
        trees.append(ast.parse(repository))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    for one in trees:
        for node in ast.walk(one):
            if isinstance(node, ast.Constant) and not isinstance(node.value, bool):
                literals[_key(node.value)] += 1
                if isinstance(node.value, str):
                    words.update(w.lower() for w in _WORD.findall(node.value))
                if isinstance(node.value, float) and one is tree:
                    floats.append(_significant(repr(node.value)))
            elif isinstance(node, ast.Name | ast.Attribute | ast.FunctionDef | ast.ClassDef):
                name = getattr(node, "id", None) or getattr(node, "attr", None) or node.name  # type: ignore[attr-defined]
                words.update(p.lower() for p in _NAME_PART.findall(name))
    return _Context(literals, words, floats)


def _key(value: object) -> object:
    return (type(value).__name__, value)


def _significant(text: str) -> int:
    return len(text.lower().split("e")[0].replace(".", "").replace("-", "").strip("0"))


def _one_away(word: str, words: set[str]) -> bool:
    """Some word of ``words`` is ``word`` with one letter changed, added or dropped."""
    for i in range(len(word)):
        for c in "abcdefghijklmnopqrstuvwxyz":
            if word[:i] + c + word[i + 1 :] in words or word[:i] + c + word[i:] in words:
                return True
        if word[:i] + word[i + 1 :] in words:
            return True
    return False


def _roundness(value: int) -> int:
    value, count = abs(value), 0
    while value and value % 10 == 0:
        value, count = value // 10, count + 1
    return count if value else 99


def _scores(node: ast.Constant, statement: ast.AST, context: _Context) -> dict[str, float]:
    value = node.value
    out = dict.fromkeys(HEURISTICS, 0.0)
    context.literals[_key(value)] -= 1  # this occurrence is not "elsewhere"
    out["elsewhere"] = float(context.literals[_key(value)] > 0)
    if isinstance(value, str):
        own = [w.lower() for w in _WORD.findall(value)]
        others = collections.Counter(w.lower() for w in _WORD.findall(value))
        rest = {w for w in context.words if others[w] == 0} | {
            w.lower() for k, n in context.literals.items() if n > 0
            and isinstance(k, tuple) and isinstance(k[1], str) for w in _WORD.findall(k[1])
        }  # fmt: skip
        unknown = [w for w in own if w not in rest]
        out["typo"] = float(any(_one_away(w, rest) for w in unknown))
        out["unknown words"] = len(unknown) / len(own) if own else 0.0
        call = {
            w.lower() for n in ast.walk(statement) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and n is not node for w in _WORD.findall(n.value)
        }  # fmt: skip
        out["from the call"] = sum(w in call for w in own) / len(own) if own else 0.0
        out["repeated word"] = float(len(set(own)) < len(own))
    elif isinstance(value, int) and not isinstance(value, bool):
        rounder = max(_roundness(value - 1), _roundness(value + 1)) > _roundness(value)
        out["not roundest"] = float(abs(value) >= 10 and rounder)
        near = context.literals[_key(value - 1)] + context.literals[_key(value + 1)]
        out["neighbour"] = float(near > 0 and not out["elsewhere"])
    elif isinstance(value, float) and context.floats:
        out["float digits"] = float(_significant(repr(value)) > max(context.floats, default=0) - 1)
    context.literals[_key(value)] += 1
    return out


def features(sample: Sample, repository: str) -> dict[str, float]:
    """The highest score of each heuristic over the literals the generator may change in the
    sample's test."""
    best = dict.fromkeys(FEATURES, 0.0)
    trees = parse_files({sample.path: sample.text})
    tree = trees.get(sample.path)
    found = locate(sample.test, trees)
    if tree is None or isinstance(found, str):
        return best
    context = _context(tree, repository)
    source = Source(sample.text)
    for where in found:
        statements = {
            id(inner): statement for statement in ast.walk(where.node)
            if isinstance(statement, ast.stmt) for inner in ast.walk(statement)
        }  # fmt: skip
        cases = case_values(where.node, sample.test, tree)
        seen: set[int] = set()
        for edit in Sites(where.node, source, cases).edits:
            for leaf in ast.walk(edit.node):
                if isinstance(leaf, ast.Constant) and id(leaf) not in seen:
                    seen.add(id(leaf))
                    statement = statements.get(id(leaf), where.node)
                    for name, score in _scores(leaf, statement, context).items():
                        best[name] = max(best[name], score)
                        best[f"{name} (count)"] += score > 0
    return best


# ---------------------------------------------------------------------- accuracy
def best_accuracy(scores: list[float], labels: list[bool]) -> float:
    """The accuracy of "twin when the score exceeds t" (or falls below it) at its best t."""
    pairs = sorted(zip(scores, labels, strict=True))
    twins = sum(labels)
    total = len(labels)
    best = max(twins, total - twins)
    below_twins = below = 0
    for i, (score, label) in enumerate(pairs):
        below += 1
        below_twins += label
        if i + 1 < total and pairs[i + 1][0] == score:
            continue
        # twin above t: originals below are right, twins above are right
        above_right = (below - below_twins) + (twins - below_twins)
        best = max(best, above_right, total - above_right)
    return best / total if total else 0.0


def judge(rows: list[dict[str, float]], labels: list[bool]) -> tuple[float, str, dict[str, float]]:
    """Each heuristic's accuracy alone, and the best of every weighted sum of the eight best
    alone."""
    alone = {name: best_accuracy([r[name] for r in rows], labels) for name in FEATURES}
    useful = sorted((n for n in FEATURES if any(r[n] for r in rows)), key=lambda n: -alone[n])[:8]
    best, how = 0.5, "chance"
    for weights in itertools.product((-1, 0, 1), repeat=len(useful)):
        if not any(weights):
            continue
        scores = [sum(w * r[n] for w, n in zip(weights, useful, strict=True)) for r in rows]
        accuracy = best_accuracy(scores, labels)
        if accuracy > best:
            terms = [
                f"{'+' if w > 0 else '-'}{n}" for w, n in zip(weights, useful, strict=True) if w
            ]
            best, how = accuracy, " ".join(terms)
    return best, how, alone


# ---------------------------------------------------------------------- the sets
def samples(
    instance: Instance, files: dict[str, str], rng: random.Random
) -> Iterator[tuple[str, Sample]]:
    """("new" | "old", sample) for each FAIL_TO_PASS test with a twin that changes a value:
    its original file once and one twin of each generator once."""
    new = twin_candidates(instance, files, per_test=6, rng=rng)
    old = twin_candidates(instance, files, per_test=3, natural=False)
    for generator, found, pick in (
        ("new", new, lambda twins: rng.choice(twins[:POOL])),
        ("old", old, lambda twins: twins[0]),
    ):  # fmt: skip
        chosen: Callable[[list[Twin]], Twin] = pick
        for test, twins in found.by_test.items():
            valued = [t for t in twins if t.kind != "truth"]
            if not valued:
                continue
            twin = chosen(valued)
            mutated = apply_twins(files, [twin])[twin.path]
            yield generator, Sample(twin.path, files[twin.path], test, twin=False)
            yield generator, Sample(twin.path, mutated, test, twin=True, kind=twin.kind)


def measure(mirror_dir: Path, dataset: Path, seed: int, show: int = 0) -> None:
    rows = [Instance.model_validate_json(line) for line in dataset.open() if line.strip()]
    rng = random.Random(seed)
    data: dict[str, list[tuple[dict[str, float], Sample]]] = collections.defaultdict(list)
    examples: dict[str, list[str]] = collections.defaultdict(list)
    kept = skipped = 0
    repos: collections.Counter[str] = collections.Counter()
    for instance in rows:
        mirror = mirror_dir / f"{instance.owner_name}.git"
        if not mirror.is_dir():
            skipped += 1
            continue
        base = base_files(mirror, instance)
        files = applied(base, instance.test_patch)
        if files is None:
            continue
        kept += 1
        repos[instance.repo] += 1
        for generator, sample in samples(instance, files, rng):
            repository = base.get(sample.path) or ""
            data[generator].append((features(sample, repository), sample))
            if sample.twin:
                examples[generator].append(_example(instance, data[generator][-2][1], sample))
    print(f"instances: {kept} ({', '.join(f'{r} {n}' for r, n in sorted(repos.items()))}); "
          f"skipped without a mirror: {skipped}")  # fmt: skip
    for generator, title in (("new", "drawn from the file (now)"), ("old", "fixed edits (before)")):
        _report(title, data[generator], examples[generator], seed, show)


def _report(
    title: str, items: list[tuple[dict[str, float], Sample]], examples: list[str], seed: int,
    show: int,
) -> None:  # fmt: skip
    """One generator's figures: each heuristic, the best combination, the noise beside it,
    per kind of twin, and examples."""
    labels = [s.twin for _, s in items]
    best, how, alone = judge([f for f, _ in items], labels)
    kinds = collections.Counter(s.kind for _, s in items if s.twin)
    print(f"\ntwins {title}: {len(items)} files ({sum(labels)} twins, "
          f"{len(items) - sum(labels)} originals); kinds: "
          f"{', '.join(f'{k} {n}' for k, n in kinds.most_common())}")  # fmt: skip
    for name in HEURISTICS:
        counted = alone[f"{name} (count)"]
        print(f"  {name:16} {100 * alone[name]:5.1f} %  counted {100 * counted:5.1f} %")
    print(f"  best combination {100 * best:5.1f} %  ({how})")
    shuffled = list(labels)
    random.Random(seed).shuffle(shuffled)
    noise = judge([f for f, _ in items], shuffled)[0]
    print(f"  (the same search with the labels shuffled, what it finds in noise: "
          f"{100 * noise:.1f} %)")  # fmt: skip
    by_kind: dict[str, list[tuple[dict[str, float], dict[str, float]]]] = {}
    for (row, _), (twin_row, twin) in zip(items[::2], items[1::2], strict=True):
        by_kind.setdefault(twin.kind, []).append((row, twin_row))
    print("  per kind of twin (its originals beside it), the best heuristic alone:")
    few = sorted(kind for kind, pairs in by_kind.items() if len(pairs) < 5)
    for kind, pairs in sorted(by_kind.items(), key=lambda kv: -len(kv[1])):
        if kind not in few:
            kind_rows = [r for pair in pairs for r in pair]
            kind_labels = [False, True] * len(pairs)
            top = max(best_accuracy([r[n] for r in kind_rows], kind_labels) for n in FEATURES)
            print(f"    {kind:10} {len(pairs):4d} twins  {100 * top:5.1f} %")
    if few:
        print(f"    (fewer than 5 twins, not judged alone: {', '.join(few)})")
    for line in examples[:: max(1, len(examples) // max(show, 1))][:show]:
        print(line)


def _example(instance: Instance, original: Sample, twin: Sample) -> str:
    before, after = original.text.splitlines(), twin.text.splitlines()
    changed = next((i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b), 0)
    return (f"    {instance.instance_id} ({twin.kind}): {before[changed].strip()}\n"
            f"      -> {after[changed].strip()}")  # fmt: skip


def smoke() -> None:
    from orchestrator.dataset.synthetic import build_synthetic  # noqa: PLC0415 smoke only

    with tempfile.TemporaryDirectory(prefix="swe-green-bench-") as tmp:
        synth = build_synthetic(Path(tmp) / "synth")
        measure(synth / "mirrors", synth / "instances.jsonl", seed=0, show=2)


def main() -> None:
    parser = data_parser(__doc__ or "")
    parser.add_argument("--seed", type=int, default=0, help="the draws of the twins")
    parser.add_argument("--examples", type=int, default=0, metavar="N",
                        help="print N twins of each generator")  # fmt: skip
    args = parser.parse_args()
    if args.smoke:
        smoke()
        return
    data_given(parser, args)
    measure(args.mirror_dir, args.dataset, args.seed, args.examples)


if __name__ == "__main__":
    main()
