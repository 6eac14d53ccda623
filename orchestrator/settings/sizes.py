"""Sizes in settings: ``10g``, ``200m`` as bytes."""

from __future__ import annotations


def disk_bytes(value: str | int) -> int | None:
    """``10g``, ``200m``, ``512k``, ``1000`` as bytes (powers of 1024); 0 means no budget."""
    text = str(value).strip().lower().removesuffix("b")
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    scale = units.get(text[-1:], 1)
    number = text[:-1] if text[-1:] in units else text
    try:
        size = int(float(number) * scale)
    except ValueError:
        raise ValueError(f"not a size: {value!r} (e.g. 10g, 200m)") from None
    if size < 0:
        raise ValueError(f"a size cannot be negative: {value!r}")
    return size or None
