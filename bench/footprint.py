"""Image footprint: what the environment and instance images of one image prefix hold on disk.

Usage: ``python bench/footprint.py PREFIX [--json]``, or ``python bench/footprint.py --smoke``,
or ``python bench/footprint.py PREFIX --build ID [--build ID ...] [--no-share]`` to build the
instance images of those instances first (phases 1-4 with the product's recipes, from the
``SWE_GREEN_*`` settings, under ``PREFIX``; ``--no-share``: the previous layout, every instance
image holding its base's whole history; ``--no-layers``: environment images built whole on the
base image, without the shared tools and history layers) and print the build times with the
footprint.

For every image under ``PREFIX/`` labelled ``swe-green.kind`` = ``env`` or ``instance`` it
reads the layer list (``docker image inspect``: ``RootFS.Layers`` with the sizes of
``docker history``) and counts each layer once, however many images share it:

- *base*: layers of the ``PREFIX/base:*`` images, not counted (shared by everything);
- *env own*: layers of an environment image above its base;
- *instance own*: layers of an instance image above its environment image.

It prints the totals and **MB per instance** = (env own + instance own) / instance images,
i.e. the environment layers amortized over the instances present. Only environment images
that a counted instance image is built on are counted (an environment left by an older
recipe, with no instance image above it, is reported, not counted); ``--ids-file FILE``
counts only the instance images of those instances (ids one a line). ``--smoke`` builds a tiny
base → env → instance chain from ``swe-green/base:py3.11`` under a throwaway prefix, measures
it and removes it (seconds; what CI runs so the script cannot rot).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import docker

KIND = "swe-green.kind"
INSTANCE = "swe-green.instance"
MB = 1_000_000


@dataclass
class Footprint:
    """Layer sizes of one prefix's images, each layer counted once."""

    base_layers: set[str] = field(default_factory=set)
    layer_size: dict[str, int] = field(default_factory=dict)
    env_own: dict[str, set[str]] = field(default_factory=dict)  # env image → its own layers
    instance_own: dict[str, set[str]] = field(default_factory=dict)
    unused_envs: int = 0  # environment images no counted instance image is built on

    def size(self, layers: set[str]) -> int:
        return sum(self.layer_size.get(layer, 0) for layer in layers)

    def summary(self) -> dict[str, float | int]:
        env_layers = set().union(*self.env_own.values()) if self.env_own else set()
        inst_layers = set().union(*self.instance_own.values()) if self.instance_own else set()
        inst_layers -= env_layers
        env_total, inst_total = self.size(env_layers), self.size(inst_layers)
        n_inst = len(self.instance_own)
        per_inst = [self.size(own) for own in self.instance_own.values()]
        per_env = [self.size(own) for own in self.env_own.values()]
        return {
            "env_images": len(self.env_own),
            "instance_images": n_inst,
            "env_own_mb": round(env_total / MB, 1),
            "instance_own_mb": round(inst_total / MB, 1),
            "env_median_mb": round(statistics.median(per_env) / MB, 1) if per_env else 0.0,
            "instance_median_mb": round(statistics.median(per_inst) / MB, 1) if per_inst else 0.0,
            "mb_per_instance": round((env_total + inst_total) / MB / n_inst, 1) if n_inst else 0.0,
            "envs_not_counted": self.unused_envs,
        }


def layers_of(client: docker.DockerClient, image: str) -> list[tuple[str, int]]:
    """(diff id, bytes) of each layer of ``image``, bottom first."""
    attrs = client.api.inspect_image(image)
    diff_ids = list(attrs["RootFS"].get("Layers") or [])
    # history is newest first; entries of metadata-only steps have no layer
    history = list(reversed(client.api.history(image)))
    sized_layers = [int(h["Size"]) for h in history if not _empty(h)]
    if len(sized_layers) != len(diff_ids):  # imported or squashed images: sizes per layer
        sized_layers = ([0] * (len(diff_ids) - 1) + [attrs["Size"]])[: len(diff_ids)]
    return list(zip(diff_ids, sized_layers, strict=True))


def _empty(entry: dict[str, object]) -> bool:
    created_by = str(entry.get("CreatedBy") or "")
    return entry.get("Size", 0) == 0 and "#(nop)" in created_by


def measure(client: docker.DockerClient, prefix: str, ids: set[str] | None = None) -> Footprint:
    """The footprint of ``prefix``'s images (of the instances ``ids`` only, when given)."""
    found = Footprint()
    images = client.images.list(name=f"{prefix}/*")
    layer_lists: dict[str, list[tuple[str, int]]] = {}
    for image in images:
        layer_lists[image.id] = layers_of(client, image.id)
        for layer, size in layer_lists[image.id]:
            found.layer_size[layer] = max(size, found.layer_size.get(layer, 0))
        if any(t.startswith(f"{prefix}/base:") for t in image.tags):
            found.base_layers |= {layer for layer, _ in layer_lists[image.id]}
    envs: dict[str, set[str]] = {}  # env image → all its layers
    for image in images:
        if (image.labels or {}).get(KIND) == "env":
            envs[image.tags[0] if image.tags else image.id] = set(
                layer for layer, _ in layer_lists[image.id]
            )
    used: set[str] = set()
    for image in images:
        labels = image.labels or {}
        if labels.get(KIND) != "instance" or (ids is not None and labels.get(INSTANCE) not in ids):
            continue
        layers = {layer for layer, _ in layer_lists[image.id]}
        parents = [name for name, env_layers in envs.items() if env_layers <= layers]
        parent = max(parents, key=lambda name: len(envs[name])) if parents else None
        below = envs[parent] if parent else found.base_layers
        if parent:
            used.add(parent)
        name = image.tags[0] if image.tags else image.id
        found.instance_own[name] = layers - below - found.base_layers
    found.env_own = {name: envs[name] - found.base_layers for name in sorted(used)}
    found.unused_envs = len(envs) - len(used)
    return found


def smoke(client: docker.DockerClient) -> Footprint:
    """A base → env (+1 MB) → instance (+0.5 MB) chain under a throwaway prefix."""
    prefix = f"swe-green-footprint-{uuid.uuid4().hex[:8]}"
    client.images.get("swe-green/base:py3.11").tag(f"{prefix}/base", "py3.11")
    made = [f"{prefix}/base:py3.11"]
    try:
        parent = f"{prefix}/base:py3.11"
        for kind, size, tag in (("env", "1M", "env:e"), ("instance", "512K", "instance:i")):
            container = client.containers.run(
                parent, ["sh", "-c", f"head -c {size} /dev/urandom > /{kind}.bin"], detach=True
            )
            container.wait()
            repo, name = f"{prefix}/{tag}".rsplit(":", 1)
            container.commit(repository=repo, tag=name, changes=[f"LABEL {KIND}={kind}"])
            container.remove()
            parent = f"{repo}:{name}"
            made.append(parent)
        return measure(client, prefix)
    finally:
        for ref in reversed(made):
            client.images.remove(ref, force=True)


def build(prefix: str, ids: list[str], share: bool, layers: bool = True) -> dict[str, float]:
    """Phases 1-4 of ``ids`` under ``prefix``; seconds of set-up and base commit in all
    (``layers``: setting share_layers)."""
    import tempfile
    import time

    from orchestrator.context.run_context import RunContext
    from orchestrator.context.run_dir import RunDir
    from orchestrator.dataset.instances import load_instances
    from orchestrator.environments.build import prepare_instance
    from orchestrator.sandbox.factory import backend_from
    from orchestrator.settings import load_settings

    settings = load_settings(image_prefix=prefix, share_history=share, share_layers=layers)
    rows = {i.instance_id: i for i in load_instances(settings.dataset.dataset)}
    totals = {"setup_s": 0.0, "base_commit_s": 0.0, "wall_s": 0.0}
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        ctx = RunContext(settings, backend_from(settings), f"footprint-{prefix}", RunDir(Path(tmp)))
        for instance_id in ids:
            prepared = prepare_instance(ctx, rows[instance_id])
            totals["setup_s"] += prepared.timings.get("setup", 0.0)
            totals["base_commit_s"] += prepared.timings.get("base_commit", 0.0)
            print(f"built {instance_id}: {prepared.timings}", file=sys.stderr)
    totals["wall_s"] = time.monotonic() - started
    return {k: round(v, 1) for k, v in totals.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prefix", nargs="?", help="image prefix (SWE_GREEN_IMAGE_PREFIX)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--ids-file", type=Path, help="count only these instances' images")
    parser.add_argument("--smoke", action="store_true", help="a tiny synthetic chain (CI)")
    parser.add_argument(
        "--build",
        action="append",
        default=[],
        metavar="ID",
        help="build this instance's images under PREFIX first (repeatable)",
    )
    parser.add_argument(
        "--no-share",
        action="store_true",
        help="with --build: the previous layout (share_history off)",
    )
    parser.add_argument(
        "--no-layers",
        action="store_true",
        help="with --build: environments built whole on the base image (share_layers off)",
    )
    args = parser.parse_args(argv)
    if not args.smoke and not args.prefix:
        parser.error("give an image prefix, or --smoke")
    client = docker.from_env()
    built = (
        build(args.prefix, args.build, not args.no_share, not args.no_layers) if args.build else {}
    )
    ids = set(args.ids_file.read_text().split()) if args.ids_file else None
    found = smoke(client) if args.smoke else measure(client, args.prefix, ids)
    summary = found.summary() | built
    if args.json:
        print(json.dumps(summary))
    else:
        for key, value in summary.items():
            print(f"{key:>20}  {value}")
    if args.smoke:
        ok = summary["instance_images"] == 1 and 0.4 < float(summary["instance_own_mb"]) < 1.5
        ok = ok and 0.9 < float(summary["env_own_mb"]) < 2.5
        if not ok:
            print("smoke: the synthetic chain was measured wrong", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
