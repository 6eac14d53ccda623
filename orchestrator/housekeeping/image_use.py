"""When a container last started from an image (marker files), for ``envs prune``'s order."""

from __future__ import annotations

from pathlib import Path

from orchestrator.housekeeping.names import NOT_NAME

IMAGE_USE_DIR = "image-use"


def _use_marker(data_dir: Path, image: str) -> Path:
    return Path(data_dir) / IMAGE_USE_DIR / NOT_NAME.sub("_", image)


def record_image_use(data_dir: Path, image: str) -> None:
    """Note that a container started from ``image`` now (the file's mtime), for
    ``envs prune``'s least-recently-used order. Best effort: a read-only cache is fine."""
    marker = _use_marker(data_dir, image)
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass


def last_use(data_dir: Path, image: str) -> float | None:
    """When a container last started from ``image`` (epoch seconds), if recorded."""
    try:
        return _use_marker(data_dir, image).stat().st_mtime
    except OSError:
        return None
