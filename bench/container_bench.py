#!/usr/bin/env python3
"""What the container backends cost against bwrap: per command, per demo sweep, and per image build.

1. **Per command** (median of ``--runs``): ``/bin/true`` through ``BwrapSandbox.run``, through
   ``PodmanSandbox.run`` and ``DockerSandbox.run`` (a fresh container per command: what wfbench
   does), and ``podman exec`` / ``docker exec`` into one kept container (the alternative it does not
   take: a container cannot change its mounts, network or read-only-ness per command, and what a
   command leaves running survives an exec). docker is measured when its daemon answers.
2. **Per sweep** (``--demo``): wall time of the offline demo (``--workers 2``; ``--tasks`` selects
   a part of it) under each backend, and the ratios to bwrap.
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
from wfbench.adapters.sandbox.podman import DockerSandbox, PodmanSandbox
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


def docker_image() -> str | None:
    """The base image in docker's store, or None when docker has no daemon here."""
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "base-image"), "--docker"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip().splitlines()[-1] if done.returncode == 0 else None


def per_command(runs: int, image: str, docker: str | None) -> dict[str, float]:
    workspace = tempfile.mkdtemp(prefix="bench-ws-")
    policy = SandboxPolicy(workspace=workspace, workspace_writable=True, network=False, timeout_s=60,
                           env={"PATH": "/usr/bin:/bin"})  # fmt: skip
    result: dict[str, float] = {}
    backends = [("bwrap", BwrapSandbox()), ("podman run", PodmanSandbox(image))]
    backends += [("docker run", DockerSandbox(docker))] if docker else []
    for name, sandbox in backends:
        sandbox.preflight()
        samples = []
        for _ in range(runs):
            started = time.monotonic()
            assert sandbox.run(["/bin/true"], policy=policy).ok
            samples.append(time.monotonic() - started)
        result[name] = _median(samples)
    result["podman exec (kept container)"] = _exec(PodmanSandbox(image).command(), image, runs)
    if docker:
        result["docker exec (kept container)"] = _exec(DockerSandbox(docker).command(), docker, runs)
    return result


def _exec(cli: tuple[str, ...], image: str, runs: int) -> float:
    kept = f"wfbench-bench-{uuid.uuid4().hex[:8]}"
    subprocess.run([*cli, "run", "-d", "--rm", "--name", kept, "--network", "none",
                    "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", image, "sleep", "600"],
                   check=True, capture_output=True)  # fmt: skip
    try:
        samples = []
        for _ in range(runs):
            started = time.monotonic()
            subprocess.run([*cli, "exec", kept, "/bin/true"], check=True, capture_output=True)
            samples.append(time.monotonic() - started)
        return _median(samples)
    finally:
        subprocess.run([*cli, "rm", "-f", kept], capture_output=True, check=False)


def demo(image: str, docker: str | None, tasks: str | None) -> dict[str, float]:
    env = {**os.environ, "WFBENCH_PODMAN_IMAGE": image, "WFBENCH_DOCKER_IMAGE": docker or ""}
    walls = {}
    selection = ["--tasks", tasks] if tasks else []
    for backend in ("bwrap", "podman", *(("docker",) if docker else ())):
        out = tempfile.mkdtemp(prefix=f"bench-demo-{backend}-")
        started = time.monotonic()
        argv = [sys.executable, "-m", "wfbench", "run", "--out", f"{out}/out", "--workers", "2"]
        subprocess.run([*argv, "--sandbox", backend, *selection], env=env, capture_output=True, check=True)
        walls[backend] = round(time.monotonic() - started, 1)
    for backend in ("podman", "docker"):
        if backend in walls:
            walls[f"ratio {backend}/bwrap"] = round(walls[backend] / walls["bwrap"], 2)
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
    parser.add_argument("--tasks", default=None, help="with --demo: only these tasks (wfbench run --tasks)")
    args = parser.parse_args()
    image = base_image()
    docker = docker_image()
    print("per command (median s):", per_command(args.runs, image, docker))
    if args.image:
        print("image build (s):", image_build(image))
    if args.demo:
        print("demo sweep wall (s):", demo(image, docker, args.tasks))


if __name__ == "__main__":
    main()
