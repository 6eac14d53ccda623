"""Does a shared registry beat building environment images on every node? Figures for real
images of this host.

Node A is this host's Docker engine; node B is a second Docker engine started here with an
empty data root (as root: ``dockerd`` on a private socket and a bridge of its own, no
iptables; never ``--bridge=none``, which deletes this host's docker0), so that
its pulls fetch and unpack every layer, as a fresh node would. The registry is Debian's
``docker-registry`` on 127.0.0.1 (loopback: a real network adds its transfer time,
about 8 s per GB of compressed layers at 1 Gbit/s).

1. The base images (swe-green/base:py3.9, py3.11) go to the registry and to node B once,
   as every node has them (``scripts/setup``); their figures are printed too.
2. For one environment image per repository (with one of its instance images): push from
   node A (under a copy reference: the image's own tags are untouched), pull on node B.
3. A synthetic instance's environment image (small): built cold here (phases 1-3, timed),
   pushed, pulled.

Build times of real images are this host's validation sweep medians (docs/validation.md:
"cold set-up" for environments, "phase 4" for instance images, on a loaded 2-core host).
Run (as root): python bench/registry.py [--repo sympy__sympy --repo ...]
Everything made is removed afterwards (node B's data root, the registry, the copies).
``--smoke``: one tiny image (one small file) through the registry to node B, nothing else
(seconds; without root it says so and does nothing).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.context.run_context import RunContext  # noqa: E402
from orchestrator.context.run_dir import RunDir  # noqa: E402
from orchestrator.dataset.instances import load_instances  # noqa: E402
from orchestrator.dataset.synthetic import build_synthetic  # noqa: E402
from orchestrator.environments.env_image import ensure_env_image  # noqa: E402
from orchestrator.environments.image_registry import registry_reference  # noqa: E402
from orchestrator.housekeeping.gc import gc  # noqa: E402
from orchestrator.log import configure_logging  # noqa: E402
from orchestrator.sandbox.docker import DockerBackend, connect  # noqa: E402
from orchestrator.settings import Settings  # noqa: E402
from orchestrator.setup.plan import plan_environment  # noqa: E402
from tests.local_registry import local_registry  # noqa: E402

REPOS = ["sympy__sympy", "pydata__xarray", "pytest-dev__pytest", "astropy__astropy"]
# docs/validation.md, "Time per repository": median cold set-up / phase 4, seconds
SWEEP_MEDIANS = {
    "astropy__astropy": (376, 302),
    "psf__requests": (51, 10),
    "pydata__xarray": (207, 13),
    "pylint-dev__pylint": (62, 17),
    "pytest-dev__pytest": (43, 11),
    "sphinx-doc__sphinx": (45, 11),
    "sympy__sympy": (41, 16),
}
BRIDGE_NET = "198.18.255.1/24"  # RFC 2544 benchmarking range: no real network uses it
MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"


@contextlib.contextmanager
def private_bridge() -> Iterator[str]:
    """A bridge of node B's own. Never ``--bridge=none``: a dockerd started so deletes the
    host's docker0, and with it the network of the engine already running here."""
    name = f"sgb{os.getpid() % 100000}"
    subprocess.run(["ip", "link", "add", name, "type", "bridge"], check=True)
    try:
        subprocess.run(["ip", "addr", "add", BRIDGE_NET, "dev", name], check=True)
        subprocess.run(["ip", "link", "set", name, "up"], check=True)
        yield name
    finally:
        subprocess.run(["ip", "link", "del", name], check=False)


def docker0_exists() -> bool:
    return subprocess.run(["ip", "link", "show", "docker0"], capture_output=True).returncode == 0


@contextlib.contextmanager
def second_engine(root: Path) -> Iterator[DockerBackend]:
    """A Docker engine with its own empty data root under ``root`` (node B), on a bridge of
    its own, touching no iptables rule; this host's docker0 is checked before and after."""
    had_docker0 = docker0_exists()
    root.mkdir(parents=True)
    (root / "daemon.json").write_text("{}")
    sock = root / "docker.sock"
    with contextlib.ExitStack() as stack:
        bridge = stack.enter_context(private_bridge())
        log = stack.enter_context(open(root / "dockerd.log", "w"))
        proc = subprocess.Popen(
            ["dockerd", "--config-file", str(root / "daemon.json"),
             "--data-root", str(root / "data"), "--exec-root", str(root / "exec"),
             "--pidfile", str(root / "docker.pid"), "-H", f"unix://{sock}",
             f"--bridge={bridge}", "--iptables=false", "--ip-masq=false",
             "--containerd-namespace", "swe-green-bench",
             "--containerd-plugins-namespace", "swe-green-bench-plugins"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            yield from _answering(proc, root, sock)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
            subprocess.run(["rm", "-rf", str(root)], check=False)
            if had_docker0 and not docker0_exists():
                print("ERROR: docker0 vanished while node B ran: this host's containers "
                      "have no bridge", file=sys.stderr)  # fmt: skip


def _answering(proc: subprocess.Popen, root: Path, sock: Path) -> Iterator[DockerBackend]:
    """Node B's client once its dockerd answers."""
    for _ in range(300):
        try:
            client = docker.DockerClient(base_url=f"unix://{sock}", timeout=1800)
            client.ping()
            break
        except docker.errors.DockerException:
            if proc.poll() is not None:
                raise RuntimeError((root / "dockerd.log").read_text()[-2000:]) from None
            time.sleep(0.2)
    else:
        raise RuntimeError(f"node B's dockerd did not answer: see {root / 'dockerd.log'}")
    yield DockerBackend(client)


def timed(action, *args) -> float:
    started = time.perf_counter()
    action(*args)
    return time.perf_counter() - started


def pushed_mb(registry: str, name: str, skip_layers: int) -> float:
    """MB of compressed layers of ``name`` in the registry past its first ``skip_layers``."""
    repository, tag = name.rsplit(":", 1)
    request = urllib.request.Request(
        f"http://{registry}/v2/{repository}/manifests/{tag}", headers={"Accept": MANIFEST}
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        layers = json.load(reply)["layers"]
    return sum(layer["size"] for layer in layers[skip_layers:]) / 1e6


class Table:
    def __init__(self) -> None:
        self.rows: list[tuple[str, ...]] = []

    def add(self, image: str, size: float, layer: float, build: str, push: float, pull: float):
        row = (image, f"{size:.0f}", f"{layer:.0f}", build, f"{push:.1f}", f"{pull:.1f}")
        self.rows.append(row)
        print("  ".join(row), flush=True)

    def print(self) -> None:
        head = ("image", "size MB", "pushed MB (gz)", "build s (source)", "push s", "pull s")
        widths = [max(len(r[i]) for r in [head, *self.rows]) for i in range(len(head))]
        print()
        for row in [head, tuple("-" * w for w in widths), *self.rows]:
            print(" | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


def share(a: DockerBackend, b: DockerBackend, registry: str, name: str) -> tuple[float, float]:
    """Push ``name`` from node A under a copy reference, pull it on node B: seconds each."""
    reference = registry_reference(registry, name)
    push = timed(a.images.push, name, reference)
    pull = timed(b.images.pull, reference)
    return push, pull


def real_pairs(a: DockerBackend, repos: list[str]) -> list[tuple[str, str | None]]:
    """Per repository: an environment image of this host and one of its instance images."""
    envs = {t: img for img in a.images.find(labels={"swe-green.kind": "env"}) for t in img.tags}
    instances = a.images.find(labels={"swe-green.kind": "instance"})
    pairs = []
    for repo in repos:
        found = [
            (f"swe-green/env:{repo}-{img.labels.get('swe-green.env-key')}", tag)
            for img in instances for tag in img.tags
            if tag.startswith(f"swe-green/instance:{repo}-")
        ]  # fmt: skip
        usable = [(env, inst) for env, inst in found if env in envs]
        if usable:
            pairs.append(usable[0])
        else:
            some = sorted(t for t in envs if t.startswith(f"swe-green/env:{repo}-"))
            if some:
                pairs.append((some[0], None))
    return pairs


def synthetic_env(a: DockerBackend, tmp: Path, run_id: str, prefix: str) -> tuple[str, float]:
    """A synthetic instance's environment image built cold here: (name, seconds)."""
    a.images.tag("swe-green/base:py3.11", f"{prefix}/base", "py3.11")
    synth = build_synthetic(tmp / "synth")
    instance = next(
        i for i in load_instances(str(synth / "instances.jsonl"))
        if i.instance_id == "demo__calc-1"
    )  # fmt: skip
    settings = Settings(
        data_dir=tmp / "data", mirror_dir=synth / "mirrors", recipes_file=synth / "recipes.json",
        image_prefix=prefix, setup_strategy="recipe", keep_containers="never",
    )  # fmt: skip
    ctx = RunContext(settings, a, run_id, RunDir(tmp / "run"))
    plan = plan_environment(ctx, instance)
    started = time.perf_counter()
    built = ensure_env_image(ctx, instance, plan, tmp / "setup.log")
    return built.name, time.perf_counter() - started


def tiny_image(a: DockerBackend, name: str) -> None:
    """``name``: an image of one layer holding one small file (for ``--smoke``)."""
    data, buffer = b"swe-green registry smoke\n", io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("smoke.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    repository, tag = name.rsplit(":", 1)
    a.client.api.import_image_from_data(buffer.getvalue(), repository=repository, tag=tag)


def smoke(a: DockerBackend, prefix: str) -> None:
    name = f"{prefix}/smoke:1"
    tiny_image(a, name)
    table = Table()
    try:
        with tempfile.TemporaryDirectory(prefix="sgb-", dir="/tmp") as raw:
            tmp = Path(raw)
            with local_registry(tmp / "registry") as registry, second_engine(tmp / "b") as b:
                push, pull = share(a, b, registry, name)
                size = a.client.images.get(name).attrs["Size"] / 1e6
                table.add(name, size, pushed_mb(registry, name, 0), "-", push, pull)
    finally:
        a.images.remove(name)
    table.print()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repo", action="append", help=f"default: {', '.join(REPOS)}")
    parser.add_argument("--no-real", action="store_true", help="the synthetic image only")
    parser.add_argument("--smoke", action="store_true", help="one tiny image, seconds")
    args = parser.parse_args()
    configure_logging(level="WARNING")  # the figures alone on stdout
    missing = [p for p in ("dockerd", "docker-registry", "ip") if shutil.which(p) is None]
    if os.geteuid() != 0 or missing:
        why = f"it needs {', '.join(missing)}" if missing else "it starts a second dockerd"
        if args.smoke:
            print(f"bench/registry.py --smoke: skipped, {why} (and root)")
            return
        sys.exit(f"bench/registry.py: {why}: run it as root on a host with Docker's dockerd, "
                 "Debian's docker-registry and iproute2")  # fmt: skip
    a = connect(timeout=1800)
    table = Table()
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    prefix = f"swe-green-bench-{run_id}"
    if args.smoke:
        smoke(a, prefix)
        return
    with tempfile.TemporaryDirectory(prefix="sgb-", dir="/tmp") as raw:
        tmp = Path(raw)
        try:
            with local_registry(tmp / "registry") as registry, second_engine(tmp / "b") as b:
                print(f"registry {registry}; node B: a second dockerd, empty data root")
                print("image  size MB  pushed MB  build s  push s  pull s", flush=True)
                base_layers = {}
                for base in ("swe-green/base:py3.9", "swe-green/base:py3.11"):
                    info = a.images.find(reference=base)[0]
                    base_layers[base] = len(a.client.images.get(base).attrs["RootFS"]["Layers"])
                    push, pull = share(a, b, registry, base)
                    mb = pushed_mb(registry, base, 0)
                    table.add(base, info.size / 1e6, mb, "once per node", push, pull)
                for env, inst in [] if args.no_real else real_pairs(a, args.repo or REPOS):
                    repo = env.split(":", 1)[1].rsplit("-", 1)[0]
                    cold, phase4 = SWEEP_MEDIANS.get(repo, (None, None))
                    env_attrs = a.client.images.get(env).attrs
                    py = env_attrs["Config"]["Labels"].get("swe-green.python", "3.9")[:4]
                    base = "swe-green/base:py3.11" if py.startswith("3.11") else (
                        "swe-green/base:py3.9")  # fmt: skip
                    push, pull = share(a, b, registry, env)
                    mb = pushed_mb(registry, env, base_layers[base])
                    table.add(env, env_attrs["Size"] / 1e6, mb, f"{cold} (sweep median)",
                              push, pull)  # fmt: skip
                    if inst is None:
                        continue
                    inst_attrs = a.client.images.get(inst).attrs
                    push, pull = share(a, b, registry, inst)
                    mb = pushed_mb(registry, inst, len(env_attrs["RootFS"]["Layers"]))
                    table.add(inst, inst_attrs["Size"] / 1e6, mb,
                              f"{phase4} (sweep median, phase 4)", push, pull)  # fmt: skip
                name, cold = synthetic_env(a, tmp, run_id, prefix)
                push, pull = share(a, b, registry, name)
                mb = pushed_mb(registry, name, base_layers["swe-green/base:py3.11"])
                size = a.client.images.get(name).attrs["Size"] / 1e6
                table.add(name, size, mb, f"{cold:.1f} (built now)", push, pull)
        finally:
            gc(a, run_id=run_id, image_kinds=("env",))
            a.images.remove(f"{prefix}/base:py3.11")
    table.print()
    print(
        "\npush: node A to the registry (layers it already has are skipped); pull: node B, "
        "which has the base images, fetches and unpacks the rest; loopback network."
    )


if __name__ == "__main__":
    main()
