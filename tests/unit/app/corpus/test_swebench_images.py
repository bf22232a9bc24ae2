"""SWE-bench's instance images as imported tasks' environments (docs/swebench.md, "Images")."""

from __future__ import annotations

import pytest

from wfbench.app.corpus.environment_spec import parse_environment
from wfbench.app.corpus.swebench_images import TESTBED_BIN, image_environment, image_name
from wfbench.domain.environment.image import IMAGE_DEFAULT_PATH, image_path
from wfbench.domain.environment.spec import ImageSource
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
