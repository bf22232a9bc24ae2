"""The ``environment:`` keys of an image task (docs/containers.md): parsed, resolved, refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from wfbench.app.corpus.environment_spec import parse_environment
from wfbench.domain.environment.spec import EnvironmentSpec, ImageSource
from wfbench.domain.errors import InputError


def _parse(raw: object, root: Path) -> EnvironmentSpec | None:
    return parse_environment(raw, locator="t", root=str(root))


def test_a_named_image_with_a_workdir_is_an_image_environment(tmp_path: Path) -> None:
    spec = _parse({"image": "swebench/sweb.eval.x86_64.a_1776_b:latest", "workdir": "/testbed"}, tmp_path)
    assert spec is not None
    assert spec.image == ImageSource(image="swebench/sweb.eval.x86_64.a_1776_b:latest", workdir="/testbed")
    assert spec.python is None


def test_a_containerfile_resolves_against_the_corpus_and_its_context_defaults_to_its_directory(
    tmp_path: Path,
) -> None:
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "Containerfile").write_text("FROM x\n")
    spec = _parse({"containerfile": "env/Containerfile", "build_args": {"V": 1}, "install": "make"}, tmp_path)
    assert spec is not None
    assert spec.image is not None
    assert spec.image.containerfile == str(tmp_path / "env" / "Containerfile")
    assert spec.image.context == str(tmp_path / "env")
    assert spec.image.build_args == (("V", "1"),)
    assert spec.install == ("make",)


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"image": "a", "containerfile": "b"}, "environment"),
        ({"image": "a", "python": "harness"}, "environment.python"),
        ({"image": "a", "context": "."}, "environment.context"),
        ({"image": "Not An Image!"}, "environment.image"),
        ({"image": "a", "workdir": "relative"}, "environment.workdir"),
        ({"image": "a", "workdir": "/"}, "environment.workdir"),
        ({"containerfile": "missing"}, "environment.containerfile"),
    ],
)
def test_a_bad_image_environment_is_refused_naming_the_field(tmp_path: Path, raw: object, field: str) -> None:
    with pytest.raises(InputError) as caught:
        _parse(raw, tmp_path)
    assert caught.value.field == field


def test_the_manifest_of_a_venv_environment_is_unchanged_so_its_digests_stay_the_same() -> None:
    assert "image" not in EnvironmentSpec().manifest()
    assert (
        EnvironmentSpec(image=ImageSource(image="a")).manifest()["image"] == ImageSource(image="a").manifest()
    )


def test_an_image_environment_without_a_container_backend_is_refused_naming_the_flag() -> None:
    from wfbench.adapters.repo.envbuild import CachedEnvironments
    from wfbench.domain.errors import SandboxError
    from wfbench.domain.workspace.rules import Snapshot

    class Bwrap:
        name = "bwrap"

    environments = CachedEnvironments(Bwrap(), cache_dir="/nonexistent")  # type: ignore[arg-type]
    snapshot = Snapshot(repo="r", ref="main", source_commit="0", commit="0", tree="0", path="/nonexistent")
    with pytest.raises(SandboxError, match="--sandbox podman"):
        environments.ensure(EnvironmentSpec(image=ImageSource(image="a")), snapshot=snapshot, task_env={})
