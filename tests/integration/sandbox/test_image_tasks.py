"""Tasks whose environment is a container image, end to end under ``--sandbox podman`` (issue 28).

One Containerfile ``FROM`` the local base image (``scripts/base-image``) adds a C tool the host
lacks (``datamash``) and a non-Python toolchain (Node from Debian's packages); the corpus puts the
repository at ``/src`` in it and runs a small ``install`` on top. Each task is resolved by its fix
and oracle-failed by a wrong one, with the stand-in agent and (one cell) the real Claude CLI. The
image is built once per session (module fixture) and cached by the digest of its inputs.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import claude_binary, require_or_skip
from tests.support.podman_kit import base_image
from tests.support.sweep_kit import (
    WFBENCH,
    base_files,
    bash,
    by_task,
    make_repo,
    rule,
    run_sweep,
    tell,
    turn,
    write_corpus,
)

pytestmark = pytest.mark.slow

TOTAL = '#!/bin/sh\n# The sum of the first column of a file.\nexec datamash -W mean 1 < "$1"\n'
ADD = "module.exports = (a, b) => a - b;\n"
CONTAINERFILE = (
    "FROM {base}\n"
    "RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends"
    " datamash nodejs >/dev/null && rm -rf /var/lib/apt/lists/*\n"
)
FIXES = {
    "datamash-fix": "sed -i 's/mean 1/sum 1/' bin/total",
    "datamash-wrong": "sed -i 's/mean 1/max 1/' bin/total",
    "node-fix": "sed -i 's/a - b/a + b/' lib/add.js",
    "node-wrong": "sed -i 's/a - b/a * b/' lib/add.js",
}
ORACLES = {
    "datamash": 'test "$(sh bin/total "$WFBENCH_ORACLE_ROOT/oracle.txt")" = 6',
    "node": "node -e 'process.exit(require(\"./lib/add.js\")(2, 3) === 5 ? 0 : 1)'",
}


def _task(task_id: str) -> dict[str, Any]:
    family = task_id.split("-")[0]
    return {
        "id": task_id,
        "class": "fault",
        "kind": "implementation",
        "repo": "repo",
        "ref": "main",
        "prompt": f"CASE {task_id}: fix it.",
        "verify": "true",
        "oracle": {"command": ORACLES[family], "files": [{"source": "oracle.txt", "target": "oracle.txt"}]},
    }


def _script() -> dict[str, Any]:
    probe = "command -v datamash node; pwd; id -u"
    return {"conversations": [rule(t, turn(bash(probe), bash(FIXES[t])), turn(say="done")) for t in FIXES]}


@pytest.fixture(scope="module")
def image_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus (four tasks over one repository) whose environment is the Containerfile above."""
    root = tmp_path_factory.mktemp("image-corpus")
    files = {**base_files(), "bin/total": TOTAL, "lib/add.js": ADD}
    make_repo(root, files)
    (root / "env").mkdir()
    (root / "env" / "Containerfile").write_text(CONTAINERFILE.format(base=base_image()))
    corpus = write_corpus(root, [_task(t) for t in FIXES], _script(), oracle_text="1\n2\n3\n")
    data = yaml.safe_load(corpus.read_text())
    data["environment"] = {
        "containerfile": "env/Containerfile",
        "context": "env",
        "workdir": "/src",
        "install": ["test -f bin/total", "node --version > /opt/node-version"],
    }
    corpus.write_text(yaml.safe_dump(data, sort_keys=False))
    return corpus


def _podman_env() -> dict[str, str]:
    return {**os.environ, "WFBENCH_PODMAN_IMAGE": base_image()}


@pytest.fixture(scope="module")
def standin_sweep(image_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("image-sweep") / "out"
    done = run_sweep(
        image_corpus, out, "--sandbox", "podman", "--arms", "baseline", "--outage-streak", "0",
        env=_podman_env(), timeout=1500,
    )  # fmt: skip
    return out, tell(done)


def test_an_image_task_is_resolved_by_its_fix_and_failed_by_a_wrong_one(
    standin_sweep: tuple[Path, str],
) -> None:
    """datamash (a C tool the host lacks) and Node come from the image; the oracle tells fix from wrong."""
    out, told = standin_sweep
    found = by_task(out)
    assert {t: found[t]["resolved"] for t in FIXES} == {
        "datamash-fix": True,
        "datamash-wrong": False,
        "node-fix": True,
        "node-wrong": False,
    }, told
    assert found["datamash-wrong"]["error_kind"] == "oracle-failed"
    assert found["node-wrong"]["error_kind"] == "oracle-failed"


def test_the_row_records_the_images_content_digest(standin_sweep: tuple[Path, str]) -> None:
    """``environment_digest`` is the id of the image the cells ran in (the install on top included)."""
    out, told = standin_sweep
    digests = {row["environment_digest"] for row in by_task(out).values()}
    assert len(digests) == 1, told
    (digest,) = digests
    listing = subprocess.run(
        ["podman", "images", "--no-trunc", "--format", "{{.ID}} {{.Repository}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    ids = {line.split()[0].removeprefix("sha256:") for line in listing.splitlines() if "wfbench-env" in line}
    assert digest in ids


def test_the_agent_works_in_the_images_workdir_as_an_unprivileged_user(
    standin_sweep: tuple[Path, str],
) -> None:
    """The probe saw both tools on the image's PATH, the repository at /src and uid 1000."""
    out, told = standin_sweep
    transcript = "".join(p.read_text() for p in (out / "cells" / "node-fix").rglob("*.jsonl"))
    assert "/usr/bin/datamash" in transcript, told
    assert "/usr/bin/node" in transcript
    assert "/src" in transcript
    assert "1000" in transcript


def test_the_real_claude_cli_resolves_an_image_task(image_corpus: Path, tmp_path: Path) -> None:
    """The pinned CLI, mounted read-only from the host install, runs inside the task's image."""
    binary = claude_binary()
    if binary is None:
        require_or_skip("WFBENCH_REQUIRE_CLAUDE", "the Claude Code CLI is not installed")
    env = {**_podman_env(), "WFBENCH_CLAUDE_BIN": str(binary)}
    out = tmp_path / "claude"
    done = run_sweep(
        image_corpus, out, "--sandbox", "podman", "--arms", "baseline", "--tasks", "node-fix",
        "--agent", "claude", env=env, timeout=600,
    )  # fmt: skip
    row = by_task(out)["node-fix"]
    assert row["resolved"] is True, tell(done) + json.dumps(row)[:2000]


def test_tasks_validate_works_on_an_image_task_and_reuses_the_cached_image(
    image_corpus: Path, standin_sweep: tuple[Path, str]
) -> None:
    """The image comes from the cache (the sweep's digest), the oracle fails at the base commit: valid."""
    done = subprocess.run(
        [*WFBENCH, "tasks", "validate", str(image_corpus), "--sandbox", "podman", "--tasks", "node-fix",
         "--json"],
        capture_output=True, text=True, timeout=900, check=False, env=_podman_env(),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["invalid"] == []
    (task,) = report["tasks"]
    assert task["environment_digest"] == by_task(standin_sweep[0])["node-fix"]["environment_digest"]


@pytest.mark.nightly
def test_the_same_image_tasks_run_under_docker(image_corpus: Path, tmp_path: Path) -> None:
    """The Containerfile is built with ``docker build`` (host network: the daemon has no bridge) and
    each task is resolved by its fix and failed by a wrong one, as under podman (~60 s: nightly)."""
    from tests.support.podman_kit import docker_image

    env = {**os.environ, "WFBENCH_DOCKER_IMAGE": docker_image()}
    out = tmp_path / "docker"
    done = run_sweep(
        image_corpus, out, "--sandbox", "docker", "--arms", "baseline", "--outage-streak", "0",
        env=env, timeout=1500,
    )  # fmt: skip
    found = by_task(out)
    assert {t: found[t]["resolved"] for t in FIXES} == {
        "datamash-fix": True,
        "datamash-wrong": False,
        "node-fix": True,
        "node-wrong": False,
    }, tell(done)
    assert len({row["environment_digest"] for row in found.values()}) == 1
