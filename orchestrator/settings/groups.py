"""The settings of each component, one model per group; every setting keeps one flat name
(the group is only where it is documented and which component receives it)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from orchestrator.settings.sizes import disk_bytes

# a registry as `docker push <registry>/<name>` takes it: host[:port][/path]
_REGISTRY = r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*"


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def default_of(group: type[BaseModel], name: str) -> Any:
    """The documented default of setting ``name`` of ``group``: a component's own model of
    the same value (a sandbox's limits, a participant's) takes it from here, not a copy."""
    return group.model_fields[name].default


class StorageSettings(_Group):
    """Where things live on the host."""

    data_dir: Path = Field(
        Path.home() / ".cache" / "swe-green",
        description="Host cache: repository mirrors, locks, image use, the leases of runs in "
        "progress (runs on one engine share it to see each other's leases).",
    )
    runs_dir: Path = Field(Path("runs"), description="Where run directories are written.")


class DatasetSettings(_Group):
    """The instances (phase 0)."""

    dataset: str = Field(
        "princeton-nlp/SWE-bench_Verified",
        description="Hugging Face dataset name, or a local .jsonl/.json/.parquet file, or a "
        "directory of them (its own files and those in its data/).",
    )
    dataset_split: str = Field("test", description="Dataset split to load.")


class RepoSettings(_Group):
    """The repository cache (phase 1)."""

    repo_url_template: str = Field(
        "https://github.com/{repo}.git",
        description="Clone URL; {repo}=owner/name, {owner}, {name}, {owner_name}=owner__name.",
    )
    mirror_dir: Path | None = Field(
        None,
        description="Local directory of bare mirrors named owner__name.git; overrides the URL.",
    )


class EnvironmentSettings(_Group):
    """Environment setup, the image cache and validation (phases 2-4)."""

    recipes_file: Path | None = Field(
        None, description="Extra recipes (JSON list of Recipe objects) that override shipped ones."
    )
    setup_strategy: Literal["auto", "recipe", "llm"] = Field(
        "auto", description="auto tries recipe, then llm (when an API key is set)."
    )
    validate_env: bool = Field(True, description="Validate each instance's environment first.")
    validation_runs: int = Field(
        1,
        ge=1,
        le=10,
        description="Times validation runs the tests with the gold patch; a test whose outcome "
        "differs between runs is flaky and left out of grading.",
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
    share_history: bool = Field(
        True,
        description="Environment images hold the repository history their instances share "
        "(the common ancestor of the dataset's base commits of that environment); an "
        "instance image adds only the objects its base reaches beyond it. Off: every "
        "instance image holds its base's whole history.",
    )
    image_prefix: str = Field("swe-green", description="Repository prefix of the tool's images.")
    base_python: str = Field("3.11", description="Default base image Python (3.9/3.11/3.13).")
    base_image_registry: str | None = Field(
        None,
        description="Registry repository the base images are pulled from when missing, "
        "tagged py<version> (e.g. ghcr.io/<org>/swe-green-base, images/base/Dockerfile); "
        "unset: the local <image_prefix>/base:py<version> images.",
    )
    registry_pythons: str = Field(
        "3.9,3.11,3.13",
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
        "registry_instance_images. Restricted policy: environment images, pull only.",
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
        return f"{self.image_prefix}/base:py{python or self.base_python}"


class SetupAgentSettings(_Group):
    """The LLM setup agent (the ``llm`` strategy)."""

    anthropic_api_key: str | None = Field(None, description="API key for the llm strategy.")
    anthropic_base_url: str | None = Field(None, description="Messages API base URL override.")
    setup_model: str = Field("claude-sonnet-4-5", description="Model of the LLM setup agent.")
    setup_max_turns: int = Field(40, ge=1, description="LLM setup agent: max turns.")
    setup_max_tokens: int = Field(400_000, ge=1, description="LLM setup agent: max total tokens.")
    setup_timeout: float = Field(
        1800, gt=0, description="LLM setup agent: wall time limit, seconds."
    )

    def anthropic_key(self) -> str | None:
        """The API key from settings, or the SDK's usual ANTHROPIC_API_KEY."""
        return self.anthropic_api_key or os.environ.get("ANTHROPIC_API_KEY")


class SandboxSettings(_Group):
    """The limits of every container, and which containers stay."""

    cpus: float = Field(2.0, gt=0, description="CPUs per instance container.")
    memory: str = Field("6g", description="Memory limit per instance container.")
    pids_limit: int = Field(2048, ge=1, description="Max processes per instance container.")
    exec_output_limit: int = Field(
        1_000_000, ge=1, description="Bytes of stdout/stderr kept per exec; the rest is cut."
    )
    disk_limit: str = Field(
        "10g",
        description="Disk budget per participant and grading container (bytes, or 200m, 10g; "
        "0 for none): past it the container is stopped and the instance ends with disk_limit.",
    )
    disk_poll: float = Field(
        1.0,
        gt=0,
        description="Slowest poll of a container's disk use, seconds (faster near the budget).",
    )
    backend: Literal["docker", "local"] = Field(
        "docker",
        description="docker: one container per sandbox (the product). local: host "
        "directories and processes with no isolation at all, for tests and development only.",
    )
    docker_policy: Literal["full", "restricted"] = Field(
        "full",
        description="full: the whole Docker API (environment images cached by commit, the "
        "network switched by disconnect). restricted: what Amber's Docker gateway allows: no "
        "commit, build, import, image listing or network connect/disconnect; set-up runs per "
        "instance and its files are copied into containers created without a network.",
    )
    keep_containers: Literal["on_failure", "always", "never"] = Field(
        "on_failure",
        description="Which participant containers stay (stopped) for inspection; they keep "
        "what the participant wrote, at most the disk budget. on_failure keeps none for an "
        "empty patch (nothing to learn from).",
    )
    max_kept_per_run: int = Field(
        20, ge=0, description="Kept containers of one run, at most; past it none is kept."
    )
    max_kept_per_host: int = Field(
        100,
        ge=0,
        description="Kept containers on the engine, at most: the oldest of finished runs go "
        "first; when only those of runs in progress remain, none more is kept.",
    )

    @field_validator("disk_limit")
    @classmethod
    def _disk_limit_is_a_size(cls, value: str) -> str:
        disk_bytes(value)
        return value

    @field_validator("memory")
    @classmethod
    def _memory_is_a_size(cls, value: str) -> str:
        if not disk_bytes(value):
            raise ValueError(f"not a memory size: {value!r} (e.g. 6g, 512m)")
        return value.strip()

    def disk_bytes(self) -> int | None:
        """The disk budget in bytes, or None for no budget."""
        return disk_bytes(self.disk_limit)


class ParticipantSettings(_Group):
    """The participant's limits (phase 5)."""

    max_tool_calls: int = Field(250, ge=1, description="Tool calls per instance.")
    tool_timeout: float = Field(180, gt=0, description="Seconds per tool call.")
    instance_timeout: float = Field(
        3600, gt=0, description="Seconds for the participant per instance."
    )
    participant_timeout: float = Field(
        900, gt=0, description="Seconds to wait for one reply from the participant."
    )
    max_reply_bytes: int = Field(
        20_000_000,
        ge=1,
        description="Bytes read from the participant per reply (its final answer included); "
        "past it the instance ends with participant_protocol.",
    )


class GradingSettings(_Group):
    """Applying the patch and running the tests (phases 6-7)."""

    patch_fuzz: int = Field(
        5,
        ge=0,
        description="patch -p1 --fuzz=N as the last apply strategy (the official harness: 5).",
    )
    test_timeout: float = Field(1800, gt=0, description="Seconds for one test run.")
    grade_in_participant_container: bool = Field(
        False,
        description="Grade in the participant's container instead of a fresh one "
        "(unsafe for untrusted participants: whatever they planted there runs in the tests).",
    )
    unprivileged_tests: bool = Field(
        True,
        description="Run the tests as an unprivileged user that can only create files in the "
        "repository (verified on real instances of all nine mirrored repositories; false runs "
        "them as root).",
    )


class RunSettings(_Group):
    """A run: how many instances at once, and its log."""

    concurrency: int | None = Field(
        None, ge=1, description="Instances at once; default from the host's cores and memory."
    )
    log_json: bool = Field(False, description="Log JSON lines instead of console text.")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field(
        "INFO", description="Log level: DEBUG, INFO, WARNING, ERROR or CRITICAL."
    )

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    ray_address: str | None = Field(
        None,
        description="Run each instance on a node of this Ray cluster (`auto`, `host:6379` or "
        "`ray://host:10001`); unset: on this host. Needs `pip install 'swe-green[ray]'`.",
    )
    ray_max_retries: int = Field(
        2, ge=0, description="Ray: times an instance is started again after its node died."
    )
    ray_slots_resource: str = Field(
        "sandbox_slots",
        description="Ray: the custom resource a Docker host offers, one unit per instance at "
        "once (`ray start --resources '{\"sandbox_slots\": 2}'`).",
    )


class ServeSettings(_Group):
    """The green agent (`swe-green serve`)."""

    serve_token: str | None = Field(
        None,
        description="serve: require 'Authorization: Bearer <token>' on A2A calls (card stays "
        "public); off when unset.",
    )
    serve_allowed_hosts: str = Field(
        "",
        description="serve: participant hosts allowed, comma-separated globs "
        "(e.g. '127.0.0.1,*.internal'); empty = any host.",
    )
    serve_insecure: bool = Field(
        False,
        description="serve: allow a non-loopback address without a token or an allow-list "
        "(anyone reaching the port may start assessments and make the agent fetch any URL).",
    )
    serve_keep_containers: Literal["on_failure", "always", "never"] = Field(
        "never", description="serve: which participant containers stay (keep_containers)."
    )
    serve_max_kept_containers: int = Field(
        10, ge=0, description="serve: kept containers of assessments, at most; oldest go first."
    )


GROUPS: dict[str, type[_Group]] = {
    "storage": StorageSettings,
    "dataset": DatasetSettings,
    "repos": RepoSettings,
    "environment": EnvironmentSettings,
    "setup_agent": SetupAgentSettings,
    "sandbox": SandboxSettings,
    "participant": ParticipantSettings,
    "grading": GradingSettings,
    "run": RunSettings,
    "serve": ServeSettings,
}
# every setting's flat name -> its group
GROUP_OF: dict[str, str] = {
    name: group for group, model in GROUPS.items() for name in model.model_fields
}
SECRETS = ("anthropic_api_key", "serve_token")
