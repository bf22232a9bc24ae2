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

from tests.conftest import require_or_skip
from tests.support.podman_kit import base_image, podman_sandbox

pytestmark = pytest.mark.slow

TASKS = Path(__file__).resolve().parents[2] / "support" / "harbor_tasks"
INVALID = Path(__file__).resolve().parents[2] / "support" / "harbor_invalid"


class PinnedImage:
    """A sandbox whose every command runs in one image (what a built image environment will give)."""

    def __init__(self, inner, image) -> None:  # noqa: ANN001 - a PodmanSandbox, a ContainerImage
        self._inner, self._image = inner, image

    def run(self, argv, *, policy, **options):  # noqa: ANN001, ANN003, ANN201 - the Sandbox port
        from wfbench.adapters.sandbox.bwrap import python_runtime_paths

        # The podman backend binds the host's Python runtimes itself; an agent session's policy
        # names them too, and podman refuses a duplicate mount destination (reported to #28).
        runtimes = set(python_runtime_paths())
        mounts = tuple(m for m in policy.mounts if not (m.host == m.target and m.target in runtimes))
        return self._inner.run(argv, policy=attrs.evolve(policy, image=self._image, mounts=mounts), **options)

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


FIXED = "def mean(values):\n    return sum(values) / len(values) if values else 0.0\n"
WRONG = "def mean(values):\n    return 0.0\n"


class _Store:
    def __init__(self, rows: list) -> None:
        self.appended = rows

    def append(self, row) -> None:  # noqa: ANN001 - a Row
        self.appended.append(row)

    def rows(self) -> tuple:
        return tuple(self.appended)


class _Quiet:
    def notify(self, event) -> None:  # noqa: ANN001 - a SweepEvent
        pass

    def close(self) -> None:
        pass


def _no_log(event: str, **fields: object) -> None:
    pass


def _agent(name: str):  # noqa: ANN202 - a ModelCLI
    from tests.conftest import claude_binary
    from wfbench.adapters.agents.claude import ClaudeCLI

    if name == "standin":
        return ClaudeCLI.standin()
    binary = claude_binary()
    if binary is None:
        require_or_skip("WFBENCH_REQUIRE_CLAUDE", "the real Claude Code CLI is not installed")
    return ClaudeCLI.real(binary)


def _sweep(corpus_path: Path, tmp_path: Path, content: str, agent: str):  # noqa: ANN202 - the rows
    """One baseline cell of calc-fix, the stand-in agent writing ``content`` as calc/__init__.py."""
    import yaml

    from tests.support.sweep_kit import turn, write
    from wfbench.adapters.provider.script import ProviderScript
    from wfbench.adapters.provider.scripted import ScriptedProvider
    from wfbench.adapters.store.memory_sweep import MemorySweepDirectory
    from wfbench.app.cell.context import CellServices, RunSettings
    from wfbench.app.corpus.arms import resolve_arms
    from wfbench.app.corpus.corpus import load_corpus
    from wfbench.app.sweep.run import SweepRequest, sweep
    from wfbench.cli import bootstrap as boot
    from wfbench.domain.workspace.sandbox import ContainerImage

    tmp_path.mkdir(parents=True)
    script = tmp_path / "provider.yaml"
    read = {"name": "Read", "input": {"file_path": "/app/calc/__init__.py"}}
    rules = [
        {
            "when": ["mean([])"],
            "turns": [turn(read), turn(write("/app/calc/__init__.py", content)), turn(say="done")],
        }
    ]
    script.write_text(yaml.safe_dump({"conversations": rules}))
    loaded = load_corpus(str(corpus_path))
    spec = next(t for t in loaded.tasks if t.id == "calc-fix")
    # network host: the run flow's model bridge for podman is the container issue's to wire; until
    # then the session reaches the loopback provider over the host's network (verify and the oracle
    # still run with none).
    corpus = attrs.evolve(loaded, tasks=(attrs.evolve(spec, environment=None, network="host"),))
    sandbox = PinnedImage(podman_sandbox(), ContainerImage(_image("calc-fix"), "/app"))
    rows: list = []
    with ScriptedProvider(ProviderScript.load(str(script))) as provider:
        settings = RunSettings(
            out_dir=str(tmp_path / "out"),
            work_dir=str(tmp_path / "work"),
            model="claude-sonnet-4-5",
            sandbox_backend="podman",
            command_env=boot.harness_command_env(),
            agent_env={"ANTHROPIC_BASE_URL": provider.base_url},
            secrets={"ANTHROPIC_API_KEY": "offline-test-key"},
            directory=MemorySweepDirectory(),
        )
        request = SweepRequest(
            corpus=corpus, arms=resolve_arms(["baseline"], corpus.arms), runs=1, settings=settings, workers=1
        )
        services = boot.bootstrap(sandbox=sandbox)
        cell = CellServices(sandbox, _agent(agent), services.workspaces, services.clock)
        sweep(request, cell=cell, store=_Store(rows), view=_Quiet(), log=_no_log, cancel=threading.Event())
    return rows


@pytest.mark.parametrize("agent", ["standin", pytest.param("claude", marks=pytest.mark.claude)])
def test_an_imported_task_resolves_with_a_correct_scripted_fix_and_fails_with_a_wrong_one(
    imported, tmp_path, agent
):
    (fixed,) = _sweep(imported, tmp_path / "fixed", FIXED, agent)
    (wrong,) = _sweep(imported, tmp_path / "wrong", WRONG, agent)
    assert fixed.resolved, fixed.extra.get("oracle_output")
    assert fixed.extra["oracle_reward"] == 1.0
    assert not wrong.resolved
    assert wrong.extra["oracle_reward"] == 0.0
    assert wrong.extra["oracle_outcome"] == "reward-not-above-threshold"
