"""Imported Harbor tasks under podman: each image built once and its workdir captured, then ``tasks
validate``'s own use case — the oracle (test.sh, reward file) fails at the base and passes after
``solve.sh`` — with every command in the task's image, the workspace at its ``/app``.

The run path does not yet build a ``containerfile:`` environment into the policy (the container
issue's next step), so these tests pin each command to the image the import built, the way a
built environment will.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import attrs
import pytest

from tests.support.podman_kit import base_image, podman_sandbox

pytestmark = pytest.mark.slow

TASKS = Path(__file__).resolve().parents[2] / "support" / "harbor_tasks"
INVALID = Path(__file__).resolve().parents[2] / "support" / "harbor_invalid"


class PinnedImage:
    """A sandbox whose every command runs in one image (what a built image environment will give)."""

    def __init__(self, inner, image) -> None:  # noqa: ANN001 - a PodmanSandbox, a ContainerImage
        self._inner, self._image = inner, image

    def run(self, argv, *, policy, cancel=None):  # noqa: ANN001, ANN201 - the Sandbox port
        return self._inner.run(argv, policy=attrs.evolve(policy, image=self._image), cancel=cancel)

    def __getattr__(self, name: str):  # noqa: ANN204 - every other part of the port, unchanged
        return getattr(self._inner, name)


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    """The test tasks (and the invalid one) imported once, their images built from the base image."""
    base_image()
    from wfbench.adapters.repo.image_capture import PodmanWorkdirs
    from wfbench.app.corpus.harbor import ImportOptions
    from wfbench.app.corpus.harbor_import import import_harbor

    out = tmp_path_factory.mktemp("harbor") / "corpus"
    dirs = [str(p) for p in sorted(TASKS.iterdir())] + [str(INVALID / "already-done")]
    import_harbor(dirs, out_dir=str(out), options=ImportOptions(), images=PodmanWorkdirs())
    return out / "corpus.yaml"


def _image(task: str) -> str:
    done = subprocess.run(
        ["podman", "images", "-q", f"localhost/wfbench-harbor-{task}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()[0]


def _validate(corpus: Path, task: str, tmp_path: Path):  # noqa: ANN202 - a TaskValidation
    from wfbench.app.cell.context import CellServices, RunSettings
    from wfbench.app.corpus.binding import bind_tasks, prepare_snapshots
    from wfbench.app.corpus.corpus import load_corpus
    from wfbench.app.sweep.validation import validate_tasks
    from wfbench.cli import bootstrap as boot
    from wfbench.domain.workspace.sandbox import ContainerImage

    loaded = load_corpus(str(corpus))
    spec = next(t for t in loaded.tasks if t.id == task)
    image = ContainerImage(_image(task), spec.environment.image.workdir)
    services = boot.bootstrap(sandbox=PinnedImage(podman_sandbox(), image))
    bare = attrs.evolve(spec, environment=None)  # the image is the environment (pinned above)
    bound = bind_tasks(loaded, (bare,), workspaces=services.workspaces)
    prepared = prepare_snapshots(bound, workspaces=services.workspaces, parent=str(tmp_path))
    settings = RunSettings(
        out_dir=str(tmp_path),
        work_dir=str(tmp_path),
        model="n/a",
        sandbox_backend="podman",
        command_env=boot.harness_command_env(),
        agent_env={},
        directory=services.directory_at(str(tmp_path)),
    )
    cell = CellServices(services.sandbox, services.agent, services.workspaces, services.clock)
    (result,) = validate_tasks(prepared, services=cell, settings=settings, cancel=threading.Event())
    return result


@pytest.mark.parametrize("task", ["csv-total", "calc-fix", "greet-sh"])
def test_an_imported_tasks_oracle_fails_at_the_base_and_passes_after_its_solve_sh(imported, task, tmp_path):
    result = _validate(imported, task, tmp_path)
    assert result.problems == ()
    assert result.oracle_at_base is False
    assert result.gold_oracle is True


def test_a_task_whose_tests_pass_before_the_solution_is_invalid(imported, tmp_path):
    result = _validate(imported, "already-done", tmp_path)
    assert result.oracle_at_base is True
    assert "the hidden oracle already passes at the base commit: it measures nothing" in result.problems
