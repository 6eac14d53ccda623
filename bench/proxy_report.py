"""The report of a proxy validation sweep (docs/validation-proxy.md): one row per (repository,
version) of django, scikit-learn and matplotlib, from the proxy preparation records
(``prepare.jsonl`` of bench/proxy_mirror.py) and the run directories of ``swe-green validate``
on the proxy dataset.

Each failure gets an owner: *ours* (recipe, runner, parser), *proxy* (the release tree differs
from the instance's base commit) or *python* (the spec's Python is not in the base images).
The automatic attribution by root cause can be overridden per instance in a JSON file
(``{"instance_id": {"owner": "proxy", "cause": "..."}}``).

Run: python bench/proxy_report.py --prepare DIR/prepare.jsonl \
    --causes docs/validation-proxy-causes.json --out docs/validation-proxy.md RUN_DIR ...
(``--dataset`` defaults to ``../shared/data/swe-bench-verified.jsonl`` beside the repository.)
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path

from pydantic import BaseModel

from orchestrator.grading.log_parsers import match_expected, parse_test_log
from orchestrator.recipes.recipe import load_recipes
from orchestrator.validation.sweep import SweepRecord, load_records, merge_records, root_cause

# the Verified dataset, in the shared data beside the repository
DATASET = Path(__file__).resolve().parents[2] / "shared" / "data" / "swe-bench-verified.jsonl"
REPOS = ("django/django", "scikit-learn/scikit-learn", "matplotlib/matplotlib")
# the automatic owner of a sweep root cause (overridable per instance)
_OWNER = {
    "passes without a fix": "proxy",
    "gold patch fails": "proxy",
    "gold patch does not apply": "proxy",
    "Python not available offline": "python",
    "set-up host out of reach": "host",
    "install failed": "ours",
    "tests do not run": "ours",
    "timeout": "ours",
    "flaky FAIL_TO_PASS": "ours",
    "other": "ours",
}


class Row(BaseModel):
    """One (repository, version) of the report."""

    repo: str
    version: str
    total: int = 0
    tried: int = 0
    base_built: int = 0
    fuzz: int = 0
    swept: int = 0
    env_built: int = 0
    runner_started: int = 0
    all_read: int = 0
    f2p_ok: int = 0
    p2p_ok: int = 0
    validated: int = 0
    python: str = ""
    cold: list[float] = []
    failures: list[str] = []


def unread_tests(run_dir: Path, row: dict, log_format: str) -> int | None:
    """How many listed tests the parser found no outcome for in the gold output."""
    out = run_dir / "instances" / row["instance_id"] / "validation_gold_output.txt"
    if not out.is_file():
        return None
    outcomes = parse_test_log(log_format, out.read_text(errors="replace"))
    matched = match_expected(row["FAIL_TO_PASS"] + row["PASS_TO_PASS"], outcomes)
    return sum(status is None for status in matched.values())


_SYNTAX = re.compile(r'^  File "([^"]+)", line \d+\n(?:.*\n){0,3}?(SyntaxError: .*)$', re.M)


def stand_in_syntax_error(record: SweepRecord, output: str) -> str:
    """The cause when the code under test does not compile on the stand-in Python (a syntax
    the spec's Python accepted: django 1.11.0's unparenthesized generator argument, an error
    since 3.7), else ``""``."""
    spec, used = record.python_spec, record.python_used
    if not spec or used.split(".")[:2] == spec.split(".")[:2]:
        return ""
    match = _SYNTAX.search(output)
    if match is None:
        return ""
    where = re.sub(r"^.*?/(site-packages|testbed)/", "", match.group(1))
    return (
        f"the code does not compile on the {used} stand-in for {spec}: {match.group(2)} ({where})"
    )


OFFLINE_FREETYPE = "qhull's host is out of reach: Debian's qhull and freetype"


def system_freetype_images(record: SweepRecord, output: str, setup_log: str) -> str:
    """The cause when matplotlib was built with Debian's freetype (its 2.6.1 out of reach,
    make_recipes.FIXES) and the gold run's FAIL_TO_PASS image comparisons fail: text renders
    differently from the freetype the baseline images were made with; else ``""``."""
    if record.cause != "gold patch fails" or OFFLINE_FREETYPE not in setup_log:
        return ""
    failures = output.count("ImageComparisonFailure: images not close")
    if not failures:
        return ""
    return (
        "Debian's freetype instead of 2.6.1 (its hosts are out of reach): "
        f"{failures} image comparisons differ with gold"
    )


def _owner_and_cause(
    record: SweepRecord, causes: dict, output: str = "", setup_log: str = ""
) -> tuple[str, str]:
    override = causes.get(record.instance_id)
    if override:
        return override["owner"], override["cause"]
    freetype = system_freetype_images(record, output, setup_log)
    if freetype:
        return "host", freetype
    syntax = stand_in_syntax_error(record, output) if record.stage == "validation" else ""
    if syntax:
        return "python", syntax
    cause = record.cause or "other"
    fresh = root_cause(record.message)  # the product's current classification
    if fresh not in ("install failed", "other"):
        cause = fresh
    return _OWNER.get(cause, "ours"), cause


def build_rows(
    dataset: list[dict],
    prepared: dict[str, dict],
    records: dict[str, tuple[SweepRecord, Path]],
    causes: dict,
    cold: dict[str, float] | None = None,
    outputs: dict[str, Path] | None = None,
) -> list[Row]:
    """The report's rows (pure: every input already read)."""
    recipes = load_recipes()
    rows: dict[tuple[str, str], Row] = {}
    for inst in dataset:
        key = (inst["repo"], inst["version"])
        row = rows.setdefault(key, Row(repo=key[0], version=key[1]))
        row.total += 1
        prep = prepared.get(inst["instance_id"])
        if prep is None:
            continue
        row.tried += 1
        if not prep["proxy_base"]:
            row.failures.append(f"proxy: {inst['instance_id']}: patches do not reverse-apply")
            continue
        row.base_built += 1
        row.fuzz += {prep["test_patch_method"], prep["gold_patch_method"]} != {"exact"}
        if inst["instance_id"] not in records:
            continue
        record, run_dir = records[inst["instance_id"]]
        row.swept += 1
        row.python = f"{record.python_spec} → {record.python_used}"
        if record.stage != "setup":
            row.env_built += 1
            if inst["instance_id"] in (cold or {}):
                row.cold.append((cold or {})[inst["instance_id"]])
        run_dir = (outputs or {}).get(inst["instance_id"], run_dir)  # a cached record has none
        unread = unread_tests(run_dir, inst, recipes[key].log_format)
        if unread is not None:
            row.runner_started += 1
            row.all_read += unread == 0
        if record.ok:
            row.validated += 1
            row.f2p_ok += 1
            row.p2p_ok += not record.excluded_p2p
            if record.excluded_p2p:
                n = len(record.excluded_p2p)
                row.failures.append(f"note: {inst['instance_id']}: {n} P2P left out")
        else:
            out = run_dir / "instances" / inst["instance_id"] / "validation_gold_output.txt"
            text = out.read_text(errors="replace") if out.is_file() else ""
            log = out.with_name("setup.log")
            setup_log = log.read_text(errors="replace") if log.is_file() else ""
            owner, cause = _owner_and_cause(record, causes, text, setup_log)
            row.failures.append(f"{owner}: {inst['instance_id']}: {cause}")
    return [rows[k] for k in sorted(rows, key=lambda k: (k[0], [int(p) for p in k[1].split(".")]))]


def _grouped(failures: list[str]) -> list[str]:
    """``owner: id: cause`` lines grouped as ``owner × n: cause (ids)``."""
    groups: dict[tuple[str, str], list[str]] = {}
    for line in failures:
        owner, iid, cause = line.split(": ", 2)
        groups.setdefault((owner, cause), []).append(iid.rsplit("-", 1)[-1])
    return [
        f"{owner} × {len(ids)}: {cause} ({', '.join(ids)})"
        for (owner, cause), ids in groups.items()
    ]


def _owner_counts(rows: list[Row]) -> dict[str, int]:
    """Failures of swept instances per owner (``note`` lines and unswept ones aside)."""
    counts: dict[str, int] = {}
    for row in rows:
        for line in row.failures:
            owner, _, cause = line.split(": ", 2)
            if owner != "note" and cause != "patches do not reverse-apply":
                counts[owner] = counts.get(owner, 0) + 1
    return counts


def markdown(rows: list[Row], wall: str) -> str:
    """The report's Markdown table and summary."""
    tried = sum(r.tried for r in rows)
    total = sum(r.total for r in rows)
    built = sum(r.base_built for r in rows)
    swept = sum(r.swept for r in rows)
    good = sum(r.validated for r in rows)
    share = f"{100 * good / swept:.0f} %" if swept else "–"
    owners = _owner_counts(rows)
    not_ours = sum(n for owner, n in owners.items() if owner != "ours")
    judged = swept - not_ours
    ours_share = f"{100 * good / judged:.0f} %" if judged else "–"
    split = ", ".join(f"{owner} {n}" for owner, n in sorted(owners.items())) or "none"
    lines = [
        "# Proxy validation: django, scikit-learn and matplotlib from PyPI release sdists",
        "",
        f"Of the {total} instances, a proxy was attempted for {tried} and its base built for "
        f"{built}; **{swept} were swept** by `swe-green validate` (recipes unchanged, one gold "
        f"run each) and **{good} validate** ({share} of those swept). Not reached: "
        f"{built - swept} instances whose proxy base exists but which the sweep did not get to "
        f"(the *base* minus *swept* columns). Failures of the swept by owner: {split}; "
        f"leaving out those that are not ours (the proxy's, the Python's, the host's), "
        f"**{good} of {judged} validate ({ours_share})**. Wall time: {wall}.",
        "",
        "Columns: *proxy* proxy attempted; *base* proxy base built (in brackets: a patch "
        "needed less context or fuzz, and was re-made from the proxy); *swept* run through "
        "`swe-green validate`; *env* environment built; *runner* the test runner ran with the "
        "gold patch; *read* the log parser found every listed test in that output; *F2P* "
        "FAIL_TO_PASS fail at the proxy base and pass with gold; *P2P* every PASS_TO_PASS "
        "passes with gold; cold set-up in seconds (median, environment built from nothing on "
        "the loaded host). Failures: *ours* (recipe, runner, parser), *proxy* (the release "
        "differs from the base commit), *python* (the spec's Python is not offered here), "
        "*host* (a set-up download host out of this host's reach).",
        "",
        "| repository | version | Python spec → used | instances | proxy | base (fuzz) | swept "
        "| env | runner | read | F2P | P2P | validated | cold set-up s | failures |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cold = f"{statistics.median(r.cold):.0f}" if r.cold else "–"
        fails = "<br>".join(_grouped(r.failures)) or "–"
        lines.append(
            f"| {r.repo} | {r.version} | {r.python or '–'} | {r.total} | {r.tried} | "
            f"{r.base_built} ({r.fuzz}) | {r.swept} | {r.env_built} | {r.runner_started} | "
            f"{r.all_read} | {r.f2p_ok} | {r.p2p_ok} | {r.validated} | {cold} | {fails} |"
        )
    return "\n".join(lines) + "\n"


def smoke() -> None:
    """The rows and the Markdown of two made-up instances, one validated, one not."""
    dataset = [
        {"instance_id": f"django__django-{n}", "repo": "django/django", "version": "3.0",
         "FAIL_TO_PASS": ["f"], "PASS_TO_PASS": ["p"]}
        for n in (1, 2)
    ]  # fmt: skip
    prepared = {
        r["instance_id"]: {"instance_id": r["instance_id"], "proxy_base": "b",
                           "test_patch_method": "exact", "gold_patch_method": "exact"}
        for r in dataset
    }  # fmt: skip
    common = {"repo": "django/django", "version": "3.0", "python_spec": "3.6",
              "python_used": "3.9"}  # fmt: skip
    records = {
        "django__django-1": (SweepRecord(instance_id="django__django-1", ok=True, stage="done",
                                         **common), Path(".")),
        "django__django-2": (SweepRecord(instance_id="django__django-2", ok=False,
                                         stage="setup", message="pip failed", **common),
                             Path(".")),
    }  # fmt: skip
    text = markdown(build_rows(dataset, prepared, records, {}), "1 s")
    assert "django" in text and "3.0" in text, text
    print(f"smoke: {len(text.splitlines())} lines of report for 2 made-up instances")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("runs", nargs="*", type=Path, help="run directories of the sweep")
    parser.add_argument(
        "--dataset", type=Path, default=DATASET, help="the Verified dataset (default: %(default)s)"
    )
    parser.add_argument("--prepare", type=Path)
    parser.add_argument("--causes", type=Path, default=None)
    parser.add_argument("--notes", type=Path, default=None, help="Markdown to append")
    parser.add_argument("--wall", default="–")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--smoke", action="store_true", help="two made-up instances")
    args = parser.parse_args()
    if args.smoke:
        smoke()
        return
    if args.prepare is None or args.out is None:
        parser.error("--prepare and --out are required")
    if not args.dataset.is_file():
        parser.error(f"no dataset at {args.dataset}: give the Verified dataset with --dataset")
    dataset = [json.loads(x) for x in Path(args.dataset).read_text().splitlines() if x]
    dataset = [r for r in dataset if r["repo"] in REPOS]
    prepared = {}
    for line in args.prepare.read_text().splitlines():
        rec = json.loads(line)
        prepared[rec["instance_id"]] = rec
    records: dict[str, tuple[SweepRecord, Path]] = {}
    cold: dict[str, float] = {}  # an instance's cold set-up, from whichever run built it
    outputs: dict[str, Path] = {}  # the last run holding an instance's gold output
    for run in args.runs:
        for record in merge_records(load_records(run)):
            records[record.instance_id] = (record, run)
            if record.timings.get("setup") and not record.env_cache_hit:
                cold[record.instance_id] = record.timings["setup"]
            gold = run / "instances" / record.instance_id / "validation_gold_output.txt"
            if gold.is_file():
                outputs[record.instance_id] = run
    causes = json.loads(args.causes.read_text()) if args.causes else {}
    text = markdown(build_rows(dataset, prepared, records, causes, cold, outputs), args.wall)
    if args.notes:
        text += "\n" + args.notes.read_text()
    args.out.write_text(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
