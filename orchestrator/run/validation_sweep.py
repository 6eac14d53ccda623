"""A validation sweep (``swe-green validate``) as a run of the scheduler: phases 1-4 and the
gold-patch check of every instance (:func:`~orchestrator.validation.sweep.sweep_instance`) on
this host, driven as an evaluation is (:func:`.scheduler.drive`): bounded concurrency, the run
marked in progress, interruption removing the containers in flight, resume from the records
already written."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from orchestrator.context.run_context import RunContext
from orchestrator.models import Instance
from orchestrator.run.runner import LocalRunner
from orchestrator.run.scheduler import drive, interruptible
from orchestrator.validation.sweep import SweepRecord, pending, sweep_and_record


def run_sweep(
    ctx: RunContext,
    instances: list[Instance],
    concurrency: int,
    on_done: Callable[[SweepRecord], None] | None = None,
) -> list[SweepRecord]:
    """Sweep ``instances``, breadth first; those already recorded in the run directory are
    kept, not redone (:func:`~orchestrator.validation.sweep.pending`). Returns every record,
    the kept ones first, then in the order the instances finish; ``on_done`` hears of each new
    one as it is written."""
    records, todo = pending(ctx, instances)
    finished = {record.instance_id: record for record in records}

    async def one(instance: Instance) -> None:
        record = await asyncio.to_thread(sweep_and_record, ctx, instance)
        records.append(record)
        finished[record.instance_id] = record
        if on_done is not None:
            on_done(record)

    work = drive(ctx, LocalRunner(), instances, todo, one, concurrency, finished)
    asyncio.run(interruptible(work))
    return records
