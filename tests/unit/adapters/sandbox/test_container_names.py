"""Containers are named after their sweep and cell, so a killed sweep's are recognisable and removable."""

from __future__ import annotations

from wfbench.adapters.sandbox.containers import container_name, sweep_key
from wfbench.adapters.sandbox.oci_cli import OciCli
from wfbench.domain.workspace.sandbox import CommandScope


def _scope(**change: object) -> CommandScope:
    values: dict[str, object] = {
        "sweep": "/runs/a",
        "task": "t",
        "arm": "baseline",
        "run": 1,
        "phase": "verify",
    }
    values.update(change)
    return CommandScope(**values)  # type: ignore[arg-type]


def test_a_cells_container_name_is_stable_and_starts_with_its_sweeps_key() -> None:
    assert container_name(_scope()) == container_name(_scope())
    assert container_name(_scope()).startswith(f"wfbench-{sweep_key('/runs/a')}-")


def test_every_part_of_the_scope_changes_the_name() -> None:
    names = {
        container_name(_scope(**change))
        for change in ({}, {"sweep": "/runs/b"}, {"task": "u"}, {"arm": "x"}, {"run": 2}, {"phase": "oracle"})
    }
    assert len(names) == 6


def test_the_sweep_key_is_the_same_for_a_path_and_its_real_path(tmp_path) -> None:  # noqa: ANN001
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert sweep_key(str(tmp_path / "link")) == sweep_key(str(tmp_path / "real"))


def test_podman_and_docker_spell_removal_and_label_listing_their_own_way() -> None:
    podman, docker = OciCli("podman", "/usr/bin/podman", "runc"), OciCli("docker", "/usr/bin/docker", "runc")
    assert podman.remove(["n"]) == [
        "/usr/bin/podman",
        "--runtime",
        "runc",
        "rm",
        "--force",
        "--ignore",
        "--time",
        "0",
        "n",
    ]
    assert docker.remove(["n"]) == ["/usr/bin/docker", "rm", "--force", "n"]
    assert 'index .Labels "io.wfbench.sweep"' in podman.list_labelled("io.wfbench.sweep")[-1]
    assert '.Label "io.wfbench.sweep"' in docker.list_labelled("io.wfbench.sweep", "k")[-1]
    assert "label=io.wfbench.sweep=k" in docker.list_labelled("io.wfbench.sweep", "k")
