"""An imported SWE-bench instance in its own conventional image, end to end under ``--sandbox podman``.

A locally built image mimics SWE-bench's (``swebench/sweb.eval.x86_64.<id>``, ``__`` written
``_1776_``): ``FROM`` the session's base image, the library repository at ``/testbed`` at its base
commit, and an environment pre-installed at ``/opt/miniconda3/envs/testbed`` (a ``python3 -m venv``
holding pytest copied from the harness's own install and a ``.pth`` that imports ``/testbed/src``,
as an editable install would) — no registry. Two instances of the same fix are imported with
``--images swebench`` (the second id tags the same image); the stand-in agent applies the gold
edit to one and a wrong edit to the other: resolved, and ``oracle-failed``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.podman_kit import base_image, podman_env
from tests.support.realrepo_kit import bare_mirror, make_library, swebench_instance
from tests.support.sweep_kit import MODEL, WFBENCH, bash, by_task, git, rule, run_sweep, tell, turn

SITE = "/opt/miniconda3/envs/testbed/lib/python3.11/site-packages"
CONTAINERFILE = (
    "FROM {base}\n"
    "RUN python3 -m venv --without-pip /opt/miniconda3/envs/testbed\n"
    f"COPY site/ {SITE}/\n"
    "COPY testbed/ /testbed/\n"
    "WORKDIR /testbed\n"
)
#: pytest and what it imports on Python 3.11, copied from the harness's own install (no registry).
PYTEST_PARTS = ("pytest", "_pytest", "py.py", "pluggy", "iniconfig", "packaging", "pygments")
TARGET = "src/intervals/__init__.py"
EDITS = {
    "acme__intervals-12": f"sed -i 's/start < merged/start <= merged/' {TARGET}",
    "acme__intervals-13": f"sed -i 's/sorted(ranges)/sorted(set(ranges))/' {TARGET}",
}
PROBE = "command -v python; pwd"


def _site_parts(dest: Path) -> None:
    """pytest's packages and their ``dist-info`` from this interpreter's site-packages into ``dest``."""
    site = Path(pytest.__file__).resolve().parents[1]
    for entry in site.iterdir():
        name = entry.name
        if name in PYTEST_PARTS or any(
            name.lower().startswith(f"{p}-") and name.endswith(".dist-info") for p in PYTEST_PARTS
        ):
            (shutil.copytree if entry.is_dir() else shutil.copy2)(entry, dest / name)
    (dest / "intervals.pth").write_text("/testbed/src\n")


def _build_image(lib: dict[str, str], root: Path, tags: list[str]) -> None:
    context = root / "image"
    (context / "site").mkdir(parents=True)
    _site_parts(context / "site")
    subprocess.run(["git", "clone", "-q", lib["repo"], str(context / "testbed")], check=True)
    git(context / "testbed", "checkout", "-q", lib["base"])
    (context / "Containerfile").write_text(CONTAINERFILE.format(base=base_image()))
    command = ["podman", "build", "-q", *(a for t in tags for a in ("-t", t)), str(context)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """The two instances imported with ``--images swebench`` and swept once with the stand-in."""
    root = tmp_path_factory.mktemp("swebimages")
    base_image()  # skip (or fail in CI) before any work when podman is unavailable
    lib = make_library(root)
    instances = []
    for instance_id in EDITS:
        instance = swebench_instance(lib)
        instance["instance_id"] = instance_id
        instance["problem_statement"] = f"CASE {instance_id}: " + instance["problem_statement"]
        instances.append(json.dumps(instance))
    (root / "instances.jsonl").write_text("\n".join(instances) + "\n")
    tags = [f"swebench/sweb.eval.x86_64.{i.replace('__', '_1776_')}:latest" for i in EDITS]
    _build_image(lib, root, tags)
    repos = root / "mirrors"
    bare_mirror(lib, repos)
    corpus_dir = root / "corpus"
    imported = subprocess.run(
        [*WFBENCH, "tasks", "import", "swebench", str(root / "instances.jsonl"), "--repos", str(repos),
         "--out", str(corpus_dir), "--images", "swebench"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert imported.returncode == 0, tell(imported)
    corpus = corpus_dir / "corpus.yaml"
    data: dict[str, Any] = yaml.safe_load(corpus.read_text())
    script = {
        "conversations": [rule(i, turn(bash(PROBE), bash(e)), turn(say="done")) for i, e in EDITS.items()]
    }
    (corpus_dir / "script.yaml").write_text(yaml.safe_dump(script, sort_keys=False, width=10_000))
    data["provider_script"] = "script.yaml"
    data["defaults"]["model"] = MODEL
    corpus.write_text(yaml.safe_dump(data, sort_keys=False, width=10_000))
    out = root / "out"
    env = {**podman_env(), "WFBENCH_CACHE": str(root / "cache")}
    done = run_sweep(corpus, out, "--sandbox", "podman", "--outage-streak", "0", env=env, timeout=1200)
    return corpus, out, tell(done)


def test_the_importer_names_each_instances_conventional_image_at_testbed(
    swept: tuple[Path, Path, str],
) -> None:
    corpus, _, _ = swept
    environments = {t["id"]: t["environment"] for t in yaml.safe_load(corpus.read_text())["tasks"]}
    assert environments["acme__intervals-12"] == {
        "image": "swebench/sweb.eval.x86_64.acme_1776_intervals-12:latest",
        "workdir": "/testbed",
        "path": ["/opt/miniconda3/envs/testbed/bin"],
    }


def test_the_gold_edit_resolves_and_a_wrong_edit_is_oracle_failed_in_the_instance_image(
    swept: tuple[Path, Path, str],
) -> None:
    _, out, told = swept
    found = by_task(out)
    outcome = {t: (r["resolved"], r["error_kind"], r.get("oracle_outcome")) for t, r in found.items()}
    assert outcome == {
        "acme__intervals-12": (True, None, "passed"),
        "acme__intervals-13": (False, "oracle-failed", "tests-failed"),
    }, told + json.dumps(outcome)


def test_the_rows_environment_digest_is_the_instance_images_id(swept: tuple[Path, Path, str]) -> None:
    _, out, told = swept
    image = "swebench/sweb.eval.x86_64.acme_1776_intervals-12:latest"
    inspected = subprocess.run(
        ["podman", "image", "inspect", "--format", "{{.Id}}", image],
        capture_output=True,
        text=True,
        check=True,
    )
    assert by_task(out)["acme__intervals-12"]["environment_digest"] == inspected.stdout.strip(), told


def test_the_agent_worked_at_testbed_with_the_images_testbed_python(swept: tuple[Path, Path, str]) -> None:
    _, out, told = swept
    transcript = "".join(p.read_text() for p in (out / "cells" / "acme__intervals-12").rglob("*.jsonl"))
    assert "/opt/miniconda3/envs/testbed/bin/python" in transcript, told
    assert "/testbed" in transcript
    assert sys.executable not in transcript  # not the harness's interpreter


def test_an_environment_setup_commit_that_is_not_a_commit_is_refused_naming_line_and_field(
    tmp_path: Path,
) -> None:
    from wfbench.app.corpus.swebench import read_instances
    from wfbench.domain.errors import InputError

    instance = {
        **swebench_instance({"base": "a" * 40, "gold": "g", "test_patch": "t"}),
        "environment_setup_commit": "v1",
    }
    (tmp_path / "i.jsonl").write_text(json.dumps(instance) + "\n")
    with pytest.raises(InputError) as caught:
        read_instances(str(tmp_path / "i.jsonl"))
    assert (caught.value.locator, caught.value.field) == ("line 1", "environment_setup_commit")


def test_an_images_template_with_an_unknown_placeholder_stops_the_import_before_writing(
    tmp_path: Path,
) -> None:
    instance = swebench_instance({"base": "a" * 40, "gold": "g", "test_patch": "t"})
    (tmp_path / "i.jsonl").write_text(json.dumps(instance) + "\n")
    done = subprocess.run(
        [*WFBENCH, "tasks", "import", "swebench", str(tmp_path / "i.jsonl"), "--repos", str(tmp_path),
         "--out", str(tmp_path / "c"), "--images", "sweb/{repo}:{instance_id}"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, tell(done)
    assert "--images" in done.stderr
    assert not (tmp_path / "c").exists()
