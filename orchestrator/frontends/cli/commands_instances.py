"""``swe-green instances``: the benchmark's instances (:mod:`.app` registers them)."""

from __future__ import annotations

from orchestrator.frontends.cli.common import (
    Count,
    Dataset,
    Ids,
    Pattern,
    Repo,
    Shard,
    console,
    load_settings,
    select_instances,
)


def instances_ls(
    ids: Ids = None, pattern: Pattern = None, repo: Repo = None, count: Count = None,
    shard: Shard = None, dataset: Dataset = None,
) -> None:  # fmt: skip
    """Print what a selection resolves to."""
    from orchestrator.frontends.cli.tables import plain_table, short_difficulty

    settings = load_settings(dataset=dataset)
    chosen = select_instances(settings, ids, pattern, repo, count, shard)
    table = plain_table(
        ("instance", "keep"), ("repo", "fold"), ("version", "keep"), ("F2P", "keep"),
        ("P2P", "keep"), ("difficulty", "keep"),
    )  # fmt: skip
    for inst in chosen:
        table.add_row(
            inst.instance_id, inst.repo, inst.version, str(len(inst.FAIL_TO_PASS)),
            str(len(inst.PASS_TO_PASS)), short_difficulty(inst.difficulty),
        )  # fmt: skip
    console.print(table)
    console.print(f"{len(chosen)} instance(s)")
