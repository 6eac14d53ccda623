"""History hygiene on built instance images: what a participant could read of later history.

Usage: ``python bench/hygiene_check.py [IMAGE_PREFIX]`` (default ``swe-green``): for every
cached instance image (one per repository is enough, the newest), start a container as a
participant's would be, and count in ``/testbed/.git``: commits listed by
``git cat-file --batch-all-objects``, commits reachable from the refs (``git rev-list --all``),
the difference (readable but unreachable: the leak), commits dated after the base commit,
refs other than ``main`` and tags, and leftovers (reflogs, stash, FETCH_HEAD/ORIG_HEAD,
alternates, promisor/keep files, remotes). ``--smoke``: one container of ``--image`` with a
two-commit repository in ``/testbed`` instead (seconds).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.sandbox.docker import DockerSandbox as Sandbox  # noqa: E402
from orchestrator.sandbox.docker import connect  # noqa: E402
from orchestrator.settings import EnvironmentConfig  # noqa: E402
from sandbox_tools.contract import TESTBED  # noqa: E402

# the counts, run in the repository (TESTBED)
CHECK = r"""
all=$(git cat-file --batch-all-objects --batch-check='%(objecttype) %(objectname)' \
      | awk '$1=="commit"{print $2}' | sort)
reach=$(git rev-list --all | sort)
base=$(git log -1 --format=%ct HEAD)
echo "objects_commits $(echo "$all" | grep -c .)"
echo "reachable_commits $(echo "$reach" | grep -c .)"
echo "unreachable $(comm -23 <(echo "$all") <(echo "$reach") | grep -c .)"
echo "after_base $(git log --all --format=%ct | awk -v b=$base '$1>b' | grep -c .)"
echo "other_refs $(git for-each-ref --format='%(refname)' | grep -v -e '^refs/heads/main$' \
      -e '^refs/tags/' | grep -c .)"
echo "leftovers $(cd .git && ls -d logs FETCH_HEAD ORIG_HEAD refs/stash objects/info/alternates \
      objects/pack/*.promisor objects/pack/*.keep 2>/dev/null | grep -c .)"
echo "remotes $(git remote | grep -c .)"
"""


SMOKE_REPO = (
    f"mkdir -p {TESTBED} && cd {TESTBED} && git init -q -b main && "
    "git -c user.name=b -c user.email=b@b commit -q --allow-empty -m one && "
    "git -c user.name=b -c user.email=b@b commit -q --allow-empty -m two"
)


def newest_per_repo(client, prefix: str) -> list[str]:
    """The newest cached instance image of each repository, by tag."""
    newest: dict[str, tuple[str, str]] = {}
    for image in client.images.list(name=f"{prefix}/instance"):
        for tag in image.tags:
            instance = tag.split(":", 1)[1].rsplit("-", 1)[0]
            repo = instance.rsplit("-", 1)[0]
            created = image.attrs.get("Created", "")
            if repo not in newest or created > newest[repo][1]:
                newest[repo] = (tag, created)
    return [tag for _, (tag, _) in sorted(newest.items())]


def check(client, image: str, prepare: str = "") -> dict[str, str]:
    """The counts of :data:`CHECK` in a container of ``image``."""
    sandbox = Sandbox.start(client, image, run_id="bench-hygiene", instance_id="hygiene")
    try:
        if prepare:
            sandbox.exec(["bash", "-c", prepare], timeout=120)
        out = sandbox.exec(["bash", "-c", f"cd {TESTBED}\n{CHECK}"], timeout=600).stdout
    finally:
        sandbox.remove()
    return dict(line.split() for line in out.splitlines() if len(line.split()) == 2)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "prefix", nargs="?", default=EnvironmentConfig().image_prefix, help="image prefix"
    )
    parser.add_argument("--smoke", action="store_true", help="a tiny repository, seconds")
    parser.add_argument("--image", default=EnvironmentConfig().base_image(), help="for --smoke")
    args = parser.parse_args()
    backend = connect()
    client = backend.client
    print(f"{'instance image':56} {'commits':>8} {'reach':>7} {'leak':>5} {'later':>6} "
          f"{'refs':>5} {'left':>5} {'remotes':>7}")  # fmt: skip
    if args.smoke:
        images = [(args.image, SMOKE_REPO)]
    else:
        images = [(tag, "") for tag in newest_per_repo(client, args.prefix)]
    for tag, prepare in images:
        got = check(client, tag, prepare)
        print(f"{tag.split(':', 1)[1][:56]:56} {got.get('objects_commits', '?'):>8} "
              f"{got.get('reachable_commits', '?'):>7} {got.get('unreachable', '?'):>5} "
              f"{got.get('after_base', '?'):>6} {got.get('other_refs', '?'):>5} "
              f"{got.get('leftovers', '?'):>5} {got.get('remotes', '?'):>7}")  # fmt: skip


if __name__ == "__main__":
    main()
