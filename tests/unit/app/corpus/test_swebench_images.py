"""SWE-bench's instance images as imported tasks' environments, and one environment per
``environment_setup_commit`` (docs/swebench.md, "Images")."""

from __future__ import annotations

import attrs
import pytest

from wfbench.app.corpus.environment_spec import parse_environment
from wfbench.app.corpus.swebench import Instance, shared
from wfbench.app.corpus.swebench_images import TESTBED_BIN, image_environment, image_name
from wfbench.domain.environment.image import IMAGE_DEFAULT_PATH, image_path
from wfbench.domain.environment.spec import EnvironmentSpec, ImageSource, environment_digest, snapshot_key
from wfbench.domain.errors import InputError


def test_the_default_template_names_the_image_as_swebenchs_harness_does() -> None:
    """``TestSpec.instance_image_key`` for a remote namespace: lower case, ``__`` -> ``_1776_``."""
    assert image_name("swebench", "Django__django-11099") == (
        "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
    )


def test_a_template_of_ones_own_registry_gets_the_same_id() -> None:
    name = image_name("registry.local:5000/sweb/{instance_id}@sha256:" + "a" * 64, "astropy__astropy-12907")
    assert name == "registry.local:5000/sweb/astropy_1776_astropy-12907@sha256:" + "a" * 64


def test_a_template_with_another_placeholder_is_refused_naming_the_option() -> None:
    with pytest.raises(InputError, match="instance_id") as caught:
        image_name("sweb/{repo}:{instance_id}", "a__b-1")
    assert caught.value.field == "--images"


def test_an_instance_image_runs_at_testbed_with_the_conda_env_first_on_path() -> None:
    spec = parse_environment(image_environment(image_name("swebench", "a__b-1")), locator="t")
    assert spec is not None
    assert spec.image == ImageSource(
        image="swebench/sweb.eval.x86_64.a_1776_b-1:latest", workdir="/testbed", path=(TESTBED_BIN,)
    )
    assert spec.python is None
    assert spec.install == ()


def test_environment_keys_given_at_import_go_on_top_of_the_image() -> None:
    raw = image_environment("x/y:1", {"install": ["pip install -e ."], "timeout": 60})
    spec = parse_environment(raw, locator="t")
    assert spec is not None
    assert (spec.install, spec.timeout_s, spec.image and spec.image.workdir) == (
        ("pip install -e .",),
        60.0,
        "/testbed",
    )


@pytest.mark.parametrize("bad", [["bin"], ["/opt/a:/opt/b"], [3], {"a": 1}])
def test_a_path_entry_that_is_not_one_absolute_directory_is_refused(bad: object) -> None:
    with pytest.raises(InputError) as caught:
        parse_environment({"image": "x/y:1", "path": bad}, locator="t")
    assert caught.value.field == "environment.path"


def test_path_directories_come_before_what_the_image_declares() -> None:
    assert (
        image_path("/opt/miniconda3/bin:/usr/bin", ("/env/bin",)) == "/env/bin:/opt/miniconda3/bin:/usr/bin"
    )
    assert image_path("", ("/env/bin",)) == f"/env/bin:{IMAGE_DEFAULT_PATH}"
    assert image_path("/usr/bin") == "/usr/bin"


def test_an_image_without_path_keeps_the_manifest_and_so_every_earlier_digest() -> None:
    assert "path" not in ImageSource(image="x/y:1").manifest()
    assert ImageSource(image="x/y:1", path=("/a",)).manifest()["path"] == ["/a"]


def _instance(setup: str | None, base: str = "b" * 40) -> Instance:
    return Instance(
        line=1,
        instance_id="acme__lib-1",
        repo="acme/lib",
        base_commit=base,
        patch="p",
        test_patch="t",
        problem_statement="s",
        fail_to_pass=("tests/t.py::test_a",),
        pass_to_pass=(),
        environment_setup_commit=setup,
    )


def test_an_imported_venv_environment_is_keyed_on_the_repository_and_its_environment_setup_commit() -> None:
    env = shared({"python": "harness", "install": ["pip install -e ."]}, _instance("e" * 40))
    assert env["key"] == "acme/lib@" + "e" * 40


@pytest.mark.parametrize(
    "env",
    [
        {"python": "harness", "key_files": ["setup.py"]},
        {"python": "harness", "key": "mine"},
        {"image": "x/y:1", "workdir": "/testbed"},
    ],
)
def test_an_environment_keyed_otherwise_or_an_image_with_nothing_on_top_is_kept(
    env: dict[str, object],
) -> None:
    assert shared(dict(env), _instance("e" * 40)) == env


def test_an_instance_without_an_environment_setup_commit_keeps_the_tree_key() -> None:
    assert "key" not in shared({"python": "harness"}, _instance(None))


def _digest(spec: EnvironmentSpec, repo: str, tree: str) -> str:
    key = snapshot_key(spec, repo, tree, {})
    return environment_digest(spec, base="py3.11", key=key, task_env={}, location="/env")


def test_two_base_commits_with_one_key_share_one_build_and_another_repository_does_not() -> None:
    spec = parse_environment({"install": ["pip install -e ."], "key": "acme/lib@e"}, locator="t")
    assert spec is not None
    assert _digest(spec, "/r/acme", "tree-1") == _digest(spec, "/r/acme", "tree-2")
    assert _digest(spec, "/r/acme", "tree-1") != _digest(spec, "/r/other", "tree-1")
    unkeyed = attrs.evolve(spec, key=None)
    assert _digest(unkeyed, "/r/acme", "tree-1") != _digest(unkeyed, "/r/acme", "tree-2")


def test_key_and_key_files_together_are_refused() -> None:
    with pytest.raises(InputError) as caught:
        parse_environment({"key": "a", "key_files": ["setup.py"]}, locator="t")
    assert caught.value.field == "environment.key"


def test_a_spec_without_key_keeps_its_manifest_and_so_every_earlier_digest() -> None:
    assert "key" not in EnvironmentSpec(install=("x",)).manifest()
