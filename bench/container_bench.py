#!/usr/bin/env python3
"""What the podman backend costs against bwrap: per command, per demo sweep, and per image build.

1. **Per command** (median of ``--runs``): ``/bin/true`` through ``BwrapSandbox.run``, through
   ``PodmanSandbox.run`` (a fresh container per command: what wfbench does), and ``podman exec`` into
   one kept container (the alternative it does not take: a container cannot change its mounts,
   network or read-only-ness per command, and what a command leaves running survives an exec).
2. **Per sweep** (``--demo``): wall time of the offline demo (24 cells, ``--workers 2``) under each
   backend, and the ratio.
3. **Image build** (``--image``): a Containerfile ``FROM`` the base image installing one Debian
   package, cold (a fresh build argument) and cached (the same inputs again).

Usage::

    python bench/container_bench.py [--runs 10] [--demo] [--image]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wfbench.adapters.repo.images import ContainerImages
from wfbench.adapters.sandbox.bwrap import BwrapSandbox
from wfbench.adapters.sandbox.podman import PodmanSandbox
from wfbench.domain.environment.spec import EnvironmentSpec, ImageSource
from wfbench.domain.workspace.rules import Snapshot
from wfbench.domain.workspace.sandbox import SandboxPolicy

ROOT = Path(__file__).resolve().parents[1]


def base_image() -> str:
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "base-image")], capture_output=True, text=True, check=True
    )
    return done.stdout.strip().splitlines()[-1]


def _median(samples: list[float]) -> float:
    return round(statistics.median(samples), 3)


def per_command(runs: int, image: str) -> dict[str, float]:
    workspace = tempfile.mkdtemp(prefix="bench-ws-")
    policy = SandboxPolicy(workspace=workspace, workspace_writable=True, network=False, timeout_s=60,
                           env={"PATH": "/usr/bin:/bin"})  # fmt: skip
    result: dict[str, float] = {}
    for name, sandbox in (("bwrap", BwrapSandbox()), ("podman run", PodmanSandbox(image))):
        sandbox.preflight()
        samples = []
        for _ in range(runs):
            started = time.monotonic()
            assert sandbox.run(["/bin/true"], policy=policy).ok
            samples.append(time.monotonic() - started)
        result[name] = _median(samples)
    podman = PodmanSandbox(image).command()
    kept = f"wfbench-bench-{uuid.uuid4().hex[:8]}"
    subprocess.run([*podman, "run", "-d", "--rm", "--name", kept, "--network", "none",
                    "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", image, "sleep", "600"],
                   check=True, capture_output=True)  # fmt: skip
    try:
        samples = []
        for _ in range(runs):
            started = time.monotonic()
            subprocess.run([*podman, "exec", kept, "/bin/true"], check=True, capture_output=True)
            samples.append(time.monotonic() - started)
        result["podman exec (kept container)"] = _median(samples)
    finally:
        subprocess.run([*podman, "rm", "-f", "-t", "0", kept], capture_output=True, check=False)
    return result


def demo(image: str) -> dict[str, float]:
    env = {**os.environ, "WFBENCH_PODMAN_IMAGE": image}
    walls = {}
    for backend in ("bwrap", "podman"):
        out = tempfile.mkdtemp(prefix=f"bench-demo-{backend}-")
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "wfbench", "run", "--out", f"{out}/out", "--workers", "2",
                        "--sandbox", backend], env=env, capture_output=True, check=True)  # fmt: skip
        walls[backend] = round(time.monotonic() - started, 1)
    walls["ratio podman/bwrap"] = round(walls["podman"] / walls["bwrap"], 2)
    return walls


def image_build(image: str) -> dict[str, float]:
    context = tempfile.mkdtemp(prefix="bench-ctx-")
    containerfile = Path(context) / "Containerfile"
    containerfile.write_text(f"FROM {image}\nARG NONCE\nRUN apt-get update -qq && apt-get install -y -qq jq"
                             " >/dev/null && rm -rf /var/lib/apt/lists/*\n")  # fmt: skip
    source = ImageSource(
        containerfile=str(containerfile), context=context, build_args=(("NONCE", uuid.uuid4().hex),)
    )
    spec = EnvironmentSpec(python=None, image=source)
    images = ContainerImages(
        PodmanSandbox(image).command(), cache_dir=tempfile.mkdtemp(prefix="bench-images-")
    )
    snapshot = Snapshot(
        repo=context, ref="main", source_commit="0" * 40, commit="0" * 40, tree="0" * 40, path=context
    )
    timings = {}
    for label in ("cold", "cached"):
        started = time.monotonic()
        images.ensure(spec, snapshot=snapshot, task_env={})
        timings[label] = round(time.monotonic() - started, 2)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--demo", action="store_true")
    parser.add_argument("--image", action="store_true")
    args = parser.parse_args()
    image = base_image()
    print("per command (median s):", per_command(args.runs, image))
    if args.image:
        print("image build (s):", image_build(image))
    if args.demo:
        print("demo sweep wall (s):", demo(image))


if __name__ == "__main__":
    main()
