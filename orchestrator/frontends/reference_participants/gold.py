"""A participant that answers with the instance's gold patch (a ceiling for scores).

It looks the instance up by the id in the task's data part, in the dataset given to it (a
Hugging Face name, or a local ``.jsonl``/``.json``/``.parquet`` file or directory).
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from orchestrator.dataset.instances import DEFAULT_SPLIT, load_instances
from orchestrator.frontends.reference_participants.base import (
    Incoming,
    ReferenceParticipant,
    Reply,
    TurnStyle,
)
from orchestrator.models import Instance
from orchestrator.participant.serving import CardInfo


class GoldParticipant(ReferenceParticipant):
    def __init__(
        self,
        dataset: str,
        split: str = DEFAULT_SPLIT,
        turn_style: TurnStyle = "message",
        patch_in: Literal["data", "text"] = "data",
    ) -> None:
        super().__init__()
        self.dataset = dataset
        self.split = split
        self.turn_style = turn_style
        self.patch_in = patch_in
        self.info = CardInfo(
            name="gold-participant",
            description="Answers every swe-sandbox task with the dataset's gold patch.",
        )
        self._instances: dict[str, Instance] | None = None

    def _lookup(self, instance_id: str) -> Instance | None:
        if self._instances is None:
            loaded = load_instances(self.dataset, self.split)
            self._instances = {i.instance_id: i for i in loaded}
        return self._instances.get(instance_id)

    async def respond(self, state: dict[str, Any], incoming: Incoming) -> Reply:
        if incoming.spec is None:
            return Reply.answer("done")
        instance_id = str(incoming.spec.get("instance_id", ""))
        instance = await asyncio.to_thread(self._lookup, instance_id)
        if instance is None:
            return Reply(fail=f"instance {instance_id!r} is not in the dataset {self.dataset}")
        if self.patch_in == "text":
            return Reply.answer(f"The fix:\n\n```diff\n{instance.patch}```\n")
        return Reply.answer("The fix is in the patch field.", patch=instance.patch)
