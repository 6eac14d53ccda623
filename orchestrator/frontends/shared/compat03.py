"""Whole numbers stay whole for A2A 0.3 clients.

A2A 1.x carries a data part as a protobuf ``Value``, where every number is a double; the
a2a-sdk's 0.3 compatibility layer turns it back into JSON as ``3.0``. A 0.3 client (the
AgentBeats gateway, which copies our data parts into the leaderboard file) would then read
``total_instances: 3.0``. :func:`install` wraps the SDK's part conversion so that integral
numbers go out as integers, except under keys ending in ``_pct`` (fractions stay floats, so a
column keeps one type: ``1.0`` and ``0.5``).
"""

from __future__ import annotations

import functools
from typing import Any

from orchestrator.log import get_logger

_MAX_EXACT = 2**53  # beyond this a double holds no exact integer anyway


def integral(value: Any, key: str = "") -> Any:
    """``value`` with integral floats as ints, recursively (``*_pct`` keys left alone)."""
    if isinstance(value, dict):
        return {k: integral(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [integral(v, key) for v in value]
    if (
        isinstance(value, float)
        and value.is_integer()
        and abs(value) < _MAX_EXACT
        and not key.endswith("_pct")
    ):
        return int(value)
    return value


def install() -> bool:
    """Wrap the SDK's v1.0 -> v0.3 part conversion (once); False when the SDK lacks it."""
    try:
        from a2a.compat.v0_3 import conversions
        from a2a.compat.v0_3 import types as types_v03
    except ImportError:  # pragma: no cover - an SDK without the 0.3 layer
        return False
    original = getattr(conversions, "to_compat_part", None)
    if original is None:  # pragma: no cover - the SDK changed; numbers stay doubles
        get_logger().warning("compat03.not_installed", reason="no to_compat_part")
        return False
    if getattr(original, "_swe_green_integral", False):
        return True

    @functools.wraps(original)
    def to_compat_part(core_part: Any) -> Any:
        part = original(core_part)
        root = getattr(part, "root", None)
        if isinstance(root, types_v03.DataPart):
            root.data = integral(root.data)
        return part

    to_compat_part._swe_green_integral = True  # type: ignore[attr-defined]
    conversions.to_compat_part = to_compat_part
    return True
