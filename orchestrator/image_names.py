"""Every image name the product makes, in one place: ``<prefix>/<repository>:<tag>``, where
``prefix`` is the setting ``image_prefix``. The base images (``base``), the environments and
their shared layers (``env``: the tools and history images, an environment), the instances
(``instance``) and a finished sandbox's files (``successor``). Names are deterministic (but
for a successor's), so every host maps one to the same image."""

from __future__ import annotations

BASE = "base"
ENV = "env"
INSTANCE = "instance"
SUCCESSOR = "successor"


def base_image_name(prefix: str, python: str) -> str:
    """The base image of ``python`` on this host."""
    return f"{prefix}/{BASE}:py{python}"


def tools_image_name(prefix: str, python: str, key: str) -> str:
    """The shared tools image of a base image (``key``: the base image's)."""
    return f"{prefix}/{ENV}:tools-py{python}-{key}"


def history_image_name(prefix: str, owner_name: str, key: str) -> str:
    """A repository's shared history image."""
    return f"{prefix}/{ENV}:history-{owner_name.lower()}-{key}"


def env_image_name(prefix: str, owner_name: str, env_key: str) -> str:
    """An environment image (phases 1-3): the repository's, of its environment key."""
    return f"{prefix}/{ENV}:{owner_name.lower()}-{env_key}"


def instance_image_name(prefix: str, instance_id: str, instance_key: str) -> str:
    """An instance image (phase 4)."""
    return f"{prefix}/{INSTANCE}:{instance_id.lower()}-{instance_key}"


def successor_image_name(prefix: str, token: str) -> str:
    """A finished sandbox's files, kept for a fresh sandbox."""
    return f"{prefix}/{SUCCESSOR}:{token}"


def is_cache_image(prefix: str, tag: str) -> bool:
    """Is ``tag`` an environment or instance image of ``prefix``?"""
    return tag.startswith((f"{prefix}/{ENV}:", f"{prefix}/{INSTANCE}:"))


def is_env_image(prefix: str, tag: str) -> bool:
    """Is ``tag`` an environment image (or a shared layer) of ``prefix``?"""
    return tag.startswith(f"{prefix}/{ENV}:")
