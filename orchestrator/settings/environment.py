"""Config of environment set-up and the image cache (phase 2 and the images of phases 2-4,
:mod:`orchestrator.setup`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from orchestrator.image_names import base_image_name
from orchestrator.settings.base import ComponentConfig

# a registry as `docker push <registry>/<name>` takes it: host[:port][/path]
_REGISTRY = r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*"
_PYTHON = r"\d+\.\d+"

SetupStrategy = Literal["auto", "recipe", "infer", "llm"]


class EnvironmentConfig(ComponentConfig):
    """Environment set-up and the image cache (phases 2-4)."""

    recipes_file: Path | None = Field(
        None, description="Extra recipes (JSON list of Recipe objects) that override shipped ones."
    )
    setup_strategy: SetupStrategy = Field(
        "auto",
        description="recipe: the shipped or user recipe of (repo, version); infer: inferred "
        "from the repository's own files, no recipe nor LLM; llm: the setup agent; auto: "
        "recipe, else infer, then llm (when an API key is set) for an inferred environment "
        "that fails.",
    )
    fetch_python: bool = Field(
        False,
        description="Hosts with internet: `uv python install` a recipe's exact Python when no "
        "base image has it (falls back to the nearest base image Python).",
    )
    python_mirror: str | None = Field(
        None,
        description="Air-gapped hosts: a mirror of uv's Python builds (python-build-standalone "
        "releases) as an http(s) URL reachable from containers, or a host directory; "
        "`uv python install` of a recipe's exact Python reads it (UV_PYTHON_INSTALL_MIRROR). "
        "Implies fetch_python.",
    )
    install_timeout: float = Field(2400, gt=0, description="Recipe install commands: timeout, s.")
    compile_bytecode: bool = Field(
        True,
        description="Images carry checked hash-based bytecode of site-packages and the "
        "repository, compiled as root at build; grading keeps only the image's own, verified "
        "and fresh (off: every test run compiles from source).",
    )
    env_failure_ttl: float = Field(
        43200,
        ge=0,
        description="Seconds a failed environment build is remembered: instances needing it "
        "fail at once instead of rebuilding it (0: always retry).",
    )
    image_prefix: str = Field(
        "swe-green", min_length=1, description="Repository prefix of the tool's images."
    )
    share_history: bool = Field(
        True,
        description="Environment images hold the repository history their instances share "
        "(the common ancestor of the dataset's base commits of that environment); an "
        "instance image adds only the objects its base reaches beyond it. Off: every "
        "instance image holds its base's whole history.",
    )
    share_layers: bool = Field(
        True,
        description="Environment images of recipes share layers: one image per base image "
        "holds the virtual environment and pip, one per repository (on it) the history "
        "common to the dataset's instances of that repository, and an environment whose "
        "pins differ from its recipe's only by an instance's own pins is the recipe's "
        "environment plus a layer installing those pins. Off: every environment image is "
        "built whole on the base image.",
    )
    base_python: str = Field(
        "3.11",
        pattern=rf"^{_PYTHON}$",
        description="Default base image Python (3.9/3.11/3.13).",
    )
    base_image_registry: str | None = Field(
        None,
        description="Registry repository the base images are pulled from when missing, "
        "tagged py<version> (e.g. ghcr.io/<org>/swe-green-base, images/base/Dockerfile); "
        "unset: the local <image_prefix>/base:py<version> images.",
    )
    registry_pythons: str = Field(
        "3.9,3.11,3.13",
        pattern=rf"^\s*{_PYTHON}\s*(,\s*{_PYTHON}\s*)*$",
        description="The Pythons published under base_image_registry (py<version> tags), "
        "comma-separated.",
    )
    env_image_registry: str | None = Field(
        None,
        description="A registry shared by several hosts for environment images, host[:port]"
        "[/path] (e.g. 10.0.0.5:5000, Debian's docker-registry): a host lacking an "
        "environment image pulls <registry>/<image_prefix>/env:<tag> before building it, and "
        "pushes what it built. Plain-http registries must be in the engines' "
        "insecure-registries (127.0.0.0/8 is trusted by default). Instance images too, see "
        "registry_instance_images. Restricted policy: pull only.",
    )
    registry_instance_images: bool = Field(
        True,
        description="With env_image_registry: instance images (phase 4) are pulled and pushed "
        "too (1-4 s against 11-16 s of phase 4 for pure-Python repositories, 302 s for "
        "astropy; off: less registry space when each instance runs once).",
    )

    @field_validator("env_image_registry")
    @classmethod
    def _registry_is_a_host(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip().rstrip("/")
        if "://" in value:
            raise ValueError("no scheme: host[:port][/path], e.g. 10.0.0.5:5000")
        if not re.fullmatch(_REGISTRY, value):
            raise ValueError("not a registry: host[:port][/path], e.g. 10.0.0.5:5000")
        return value

    def base_image(self, python: str | None = None) -> str:
        """The base image of ``python``: from the registry when one is set, else local."""
        if self.base_image_registry:
            return f"{self.base_image_registry}:py{python or self.base_python}"
        return base_image_name(self.image_prefix, python or self.base_python)
