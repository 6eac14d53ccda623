"""Between A2A ``Part`` protobufs and the plain :data:`~.wire.WirePart` tuples."""

from __future__ import annotations

from collections.abc import Iterable

from a2a.helpers import new_data_part, new_text_part
from a2a.types import Part
from google.protobuf.json_format import MessageToDict

from .wire import WirePart


def to_wire(parts: Iterable[Part]) -> list[WirePart]:
    """Text and data parts in order (files and URLs are not part of the protocol)."""
    out: list[WirePart] = []
    for part in parts:
        if part.HasField("text"):
            out.append(("text", part.text))
        elif part.HasField("data"):
            out.append(("data", MessageToDict(part.data)))
    return out


def from_wire(parts: Iterable[WirePart]) -> list[Part]:
    return [new_text_part(v) if kind == "text" else new_data_part(v) for kind, v in parts]
