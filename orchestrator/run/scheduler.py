"""Running a selection of instances: bounded concurrency, progress events, resume.

``run_evaluation`` never lets one instance's failure stop the others. Each finished instance
is written to the run directory at once (atomically), so an interrupted run loses at most the
instances in flight; ``resume=True`` keeps the finished ones and redoes the rest from their
start, after removing the containers the interrupted run left. Where the instances run (this
host, or a Ray cluster) is the :class:`~.runner.InstanceRunner`'s business.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import signal
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Literal, TypeVar

from pydantic import BaseModel, Field

from orchestrator.context.run_context import RunContext
from orchestrator.grading.failure_labels import label_of
from orchestrator.housekeeping.active import active_run
from orchestrator.housekeeping.reaper import reap_at_start
from orchestrator.models import Instance, InstanceResult
from orchestrator.participant.protocol import Participant
from orchestrator.run.runner import InstanceRunner
from orchestrator.run.select_runner import runner_for
from orchestrator.settings.run import GB_PER_INSTANCE


class ProgressEvent(BaseModel):
    kind: Literal["started", "phase", "finished", "heartbeat", "run_finished"]
    instance_id: str = ""
    phase: str = ""
    result: InstanceResult | None = None
    done: int = 0
    total: int = 0
    statuses: dict[str, int] = Field(default_factory=dict)
    in_flight: dict[str, str] = Field(default_factory=dict)
    elapsed: float = 0.0


EventSink = Callable[[ProgressEvent], None | Awaitable[None]]


def default_concurrency() -> int:
    """What fits the host: one instance per core, and at most one per ``GB_PER_INSTANCE`` GB
    of memory."""
    cores = os.cpu_count() or 1
    try:
        mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    except (ValueError, OSError):
        mem_gb = 8.0
    return max(1, min(cores, int(mem_gb // GB_PER_INSTANCE)))


class _Progress:
    """The run's state as progress events tell it: results so far, statuses, in flight."""

    def __init__(self, results: dict[str, InstanceResult], total: int, on_event: EventSink | None):
        self.results, self.total, self.on_event = results, total, on_event
        self.statuses = Counter(str(r.status) for r in results.values())
        self.in_flight: dict[str, str] = {}
        self.started = time.monotonic()

    def event(self, kind: str, **fields: object) -> ProgressEvent:
        return ProgressEvent(
            kind=kind,
            done=len(self.results),
            total=self.total,
            statuses=dict(self.statuses),
            in_flight=dict(self.in_flight),
            elapsed=time.monotonic() - self.started,
            **fields,
        )

    async def emit(self, kind: str, **fields: object) -> None:
        if self.on_event is not None:
            outcome = self.on_event(self.event(kind, **fields))
            if inspect.isawaitable(outcome):
                await outcome

    def on_phase(self, instance_id: str, phase: str) -> None:
        self.in_flight[instance_id] = phase
        if self.on_event is not None:
            outcome = self.on_event(self.event("phase", instance_id=instance_id, phase=phase))
            if inspect.isawaitable(outcome):
                asyncio.ensure_future(outcome)

    def finished(self, result: InstanceResult) -> None:
        self.results[result.instance_id] = result
        self.statuses[str(result.status)] += 1
        self.in_flight.pop(result.instance_id, None)

    async def beat(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            await self.emit("heartbeat")


async def run_evaluation(
    ctx: RunContext,
    instances: list[Instance],
    participant: Participant,
    *,
    concurrency: int | None = None,
    on_event: EventSink | None = None,
    resume: bool = False,
    heartbeat: float = 30.0,
    gate: Callable[[], contextlib.AbstractAsyncContextManager[object]] | None = None,
    runner: InstanceRunner | None = None,
) -> list[InstanceResult]:
    """Evaluate ``instances``; returns every result of the run (earlier ones included).

    ``gate``, when given, is entered around each instance after the run's own concurrency
    limit: a limit shared with other runs (the green agent's host slots). An instance waiting
    for it shows as ``queued`` in ``in_flight``. ``runner`` says where instances run (default:
    from the settings, this host or the Ray cluster of ``ray_address``; one made here is
    closed at the end).
    """
    own_runner = runner is None
    # not in a thread: joining a Ray cluster wants the main thread
    runner = runner or runner_for(ctx.settings)
    try:
        return await _evaluate(
            ctx, instances, participant, runner, concurrency=concurrency, on_event=on_event,
            resume=resume, heartbeat=heartbeat, gate=gate,
        )  # fmt: skip
    finally:
        if own_runner:
            runner.close()


async def _evaluate(
    ctx: RunContext,
    instances: list[Instance],
    participant: Participant,
    runner: InstanceRunner,
    *,
    concurrency: int | None,
    on_event: EventSink | None,
    resume: bool,
    heartbeat: float,
    gate: Callable[[], contextlib.AbstractAsyncContextManager[object]] | None,
) -> list[InstanceResult]:
    finished = ctx.run_dir.finished_ids() if resume else set()
    if resume:
        removed = await asyncio.to_thread(runner.clean_unfinished, ctx, finished)
        if removed:
            ctx.log.info("resume.cleaned", containers=removed)
    results = {r.instance_id: r for r in ctx.run_dir.load_results() if r.instance_id in finished}
    progress = _Progress(results, len(instances), on_event)
    at_once = concurrency or ctx.settings.run.concurrency or runner.capacity()

    async def one(instance: Instance) -> None:
        if gate is None:
            await run_one(instance)
            return
        progress.in_flight[instance.instance_id] = "queued"
        async with gate():
            await run_one(instance)

    async def run_one(instance: Instance) -> None:
        progress.in_flight[instance.instance_id] = "starting"
        await progress.emit("started", instance_id=instance.instance_id)
        result = await runner.run(
            ctx, instance, participant.for_instance(instance.instance_id), progress.on_phase
        )
        result.failure_label = label_of(result, ctx.run_dir.instance_dir(result.instance_id))
        ctx.run_dir.write_result(result)
        progress.finished(result)
        await progress.emit("finished", instance_id=instance.instance_id, result=result)

    todo = [i for i in instances if i.instance_id not in finished]
    beater = asyncio.create_task(progress.beat(heartbeat))
    try:
        await drive(ctx, runner, instances, todo, one, at_once or default_concurrency(), results)
    finally:
        beater.cancel()
    await progress.emit("run_finished")
    order = {i.instance_id: n for n, i in enumerate(instances)}
    return sorted(results.values(), key=lambda r: order.get(r.instance_id, len(order)))


_T = TypeVar("_T")


async def interruptible(work: Awaitable[_T]) -> _T:
    """Await ``work``; SIGTERM (a job's time limit, a service stopping) cancels it as Ctrl-C
    does, so the driver removes the containers in flight and the caller sees
    ``KeyboardInterrupt``. Without it, SIGTERM ended the process with its containers running."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(work)
    with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await task
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGTERM)


async def drive(
    ctx: RunContext,
    runner: InstanceRunner,
    instances: Sequence[Instance],
    todo: Sequence[Instance],
    one: Callable[[Instance], Awaitable[None]],
    at_once: int,
    finished: Collection[str],
) -> None:
    """The one run driver: ``one`` of every instance of ``todo``, ``at_once`` at a time, the
    run of ``instances`` marked in progress (so that ``envs prune`` spares its images).
    ``finished`` holds the instances done so far (it grows as they finish): interrupted, start
    nothing new and remove the containers of the others. An evaluation
    (:func:`run_evaluation`) and a validation sweep (:mod:`.validation_sweep`) are both
    driven by it."""
    limit = asyncio.Semaphore(max(1, at_once))

    async def bounded(instance: Instance) -> None:
        async with limit:
            await one(instance)

    data_dir = ctx.settings.storage.data_dir
    # what dead holders (a `serve` or a `run` killed with kill -9) left goes first
    await asyncio.to_thread(reap_at_start, ctx.backend, data_dir)
    with active_run(ctx.backend, data_dir, ctx.run_id, [i.instance_id for i in instances]):
        await _run_all(ctx, runner, [bounded(i) for i in todo], finished)


async def _run_all(
    ctx: RunContext,
    runner: InstanceRunner,
    todo: Sequence[Awaitable[None]],
    finished: Collection[str],
) -> None:
    """Await every instance; interrupted, start nothing new and remove the work in flight."""
    tasks = [asyncio.ensure_future(one) for one in todo]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        # interrupted: start nothing new, and end the work in flight by removing its containers
        ctx.cancelled.set()
        await asyncio.shield(asyncio.to_thread(runner.clean_unfinished, ctx, set(finished)))
        raise
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # kept containers are stopped as their instances end; this is the backstop
        await asyncio.shield(asyncio.to_thread(runner.stop_leftovers, ctx))
