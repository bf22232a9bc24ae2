"""`wfbench promote apply`: a real sweep's evidence applied to a real repository, refused, and killed.

One paired sweep (``apply_kit.build_mirrored_sweep``: the demo's repository with a mirror of the
skills committed at ``plugin/skills``) is measured once for the module; every test applies its
evidence to its own copy of the corpus directory through the real CLI. The crash trials SIGKILL
the real CLI after each durable step of the transaction, then recover through the real CLI,
and require the six destinations to hold all the old bytes or all the new ones.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import pytest

from tests.support.apply_kit import (
    CANONICAL_PLAN,
    MIRROR,
    MIRROR_PLAN,
    OVERLAY_FILES,
    STATE_DIR,
    MirroredSweep,
    apply_argv,
    build_mirrored_sweep,
    digests,
    git,
    git_calls_of,
    killed_apply,
    killed_in_git,
    load,
    steps_of,
)
from tests.support.demo_run import bwrap_or_skip, wfbench

DESTINATIONS = tuple(
    sorted({*OVERLAY_FILES, *(p.replace(".claude/skills", MIRROR, 1) for p in OVERLAY_FILES)})
)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> MirroredSweep:
    """The paired sweep (workflow vs candidate_workflow, 2 tasks × 3 runs), measured once."""
    bwrap_or_skip()
    measured = build_mirrored_sweep(tmp_path_factory.mktemp("apply"))
    assert measured.run.returncode == 0, measured.run.stderr[-2000:]
    decisions = load(measured.evidence)["decisions"]
    assert [d["decision"] for d in decisions] == ["promote"], decisions
    return measured


@pytest.fixture(scope="module")
def steps(sweep: MirroredSweep, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The durable steps of one uninterrupted apply (the real CLI, printed as it goes)."""
    probe = killed_apply(apply_argv(sweep, sweep.copy(tmp_path_factory.mktemp("probe") / "c")), 0)
    assert probe.returncode == 0, probe.stderr
    return steps_of(probe)


def _old(sweep: MirroredSweep) -> dict[str, str | None]:
    return digests(sweep.corpus_dir / "repo", DESTINATIONS)


def _state_files(repo: Path) -> list[str]:
    return sorted(os.listdir(repo / STATE_DIR)) if (repo / STATE_DIR).is_dir() else []


def _changed(repo: Path) -> set[str]:
    """Paths git reports as changed or untracked in the working tree."""
    lines = git(repo, "status", "--porcelain", "--untracked-files=all").splitlines()
    return {line[3:] for line in lines}


def test_the_sweep_binds_every_destination_to_its_committed_incumbent_bytes(sweep: MirroredSweep) -> None:
    """target_base_digests: both SKILL.md copies by their committed sha256, every added file absent."""
    recorded = load(sweep.evidence)["target_base_digests"]
    repo = sweep.corpus_dir / "repo"
    committed = {
        path: __import__("hashlib").sha256(git(repo, "show", f"HEAD:{path}").encode()).hexdigest()
        for path in (CANONICAL_PLAN, MIRROR_PLAN)
    }

    assert sorted(recorded) == list(DESTINATIONS)
    assert {path: recorded[path] for path in committed} == committed
    assert {path for path, digest in recorded.items() if digest == "absent"} == set(DESTINATIONS) - set(
        committed
    )


def test_apply_writes_every_destination_and_nothing_else(sweep: MirroredSweep, tmp_path: Path) -> None:
    """All six destinations get the overlay's bytes; git sees only them; no journal is left, and
    no temporary directory either (``wfbench-apply-*``: the command's TMPDIR stays empty)."""
    corpus = sweep.copy(tmp_path / "c")
    repo = corpus / "repo"
    tmp = tmp_path / "tmp"
    tmp.mkdir()

    done = wfbench(*apply_argv(sweep, corpus), env={**os.environ, "TMPDIR": str(tmp)})

    assert done.returncode == 0, done.stderr
    assert digests(repo, DESTINATIONS) == sweep.overlay_digests()
    assert _changed(repo) == set(DESTINATIONS)
    assert _state_files(repo) == ["lock"]
    assert list(tmp.iterdir()) == []
    assert "applied overlay" in done.stdout
    assert "evidence sha256:" in done.stdout


def test_a_second_apply_of_the_same_evidence_changes_nothing(sweep: MirroredSweep, tmp_path: Path) -> None:
    """Applying twice: the second run says it is already applied and exits 0."""
    corpus = sweep.copy(tmp_path / "c")
    assert wfbench(*apply_argv(sweep, corpus)).returncode == 0

    again = wfbench(*apply_argv(sweep, corpus))

    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("already applied")


def test_apply_on_a_new_branch_commits_exactly_the_written_files_with_the_evidence_digest(
    sweep: MirroredSweep, tmp_path: Path
) -> None:
    """--branch: a new checked-out branch, one commit of the six files, the evidence sha256 in its message.

    The commit's private index (``wfbench-index-*``) is gone too: the command's TMPDIR stays empty.
    """
    corpus = sweep.copy(tmp_path / "c")
    repo = corpus / "repo"
    base = git(repo, "rev-parse", "HEAD").strip()
    tmp = tmp_path / "tmp"
    tmp.mkdir()

    done = wfbench(
        *apply_argv(sweep, corpus, "--branch", "skills/promote-1"), env={**os.environ, "TMPDIR": str(tmp)}
    )

    assert done.returncode == 0, done.stderr
    evidence_sha = __import__("hashlib").sha256(sweep.evidence.read_bytes()).hexdigest()
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "skills/promote-1"
    assert git(repo, "rev-parse", "HEAD~1").strip() == base
    assert f"Evidence: sha256:{evidence_sha}" in git(repo, "log", "-1", "--format=%B")
    assert set(git(repo, "show", "--name-only", "--format=", "HEAD").split()) == set(DESTINATIONS)
    assert _changed(repo) == set()
    assert list(tmp.iterdir()) == []


def test_an_existing_branch_is_refused_before_anything_is_written(
    sweep: MirroredSweep, tmp_path: Path
) -> None:
    """--branch naming a branch that exists: exit 2, the working tree untouched."""
    corpus = sweep.copy(tmp_path / "c")
    repo = corpus / "repo"
    git(repo, "branch", "taken")

    done = wfbench(*apply_argv(sweep, corpus, "--branch", "taken"))

    assert done.returncode == 2
    assert "branch taken already exists" in done.stderr
    assert digests(repo, DESTINATIONS) == _old(sweep)


def test_a_failing_commit_rolls_the_whole_swap_back(sweep: MirroredSweep, tmp_path: Path) -> None:
    """git cannot write its index (a held index.lock): the files go back to the old bytes, no branch."""
    corpus = sweep.copy(tmp_path / "c")
    repo = corpus / "repo"
    (repo / ".git" / "index.lock").write_text("")

    done = wfbench(*apply_argv(sweep, corpus, "--branch", "skills/promote-1"))

    assert done.returncode == 1
    assert "rolled back" in done.stderr
    assert "Traceback" not in done.stderr
    assert digests(repo, DESTINATIONS) == _old(sweep)
    assert "skills/promote-1" not in git(repo, "branch", "--list")
    assert _state_files(repo) == ["lock"]


def test_a_locally_edited_destination_is_refused_by_compare_and_swap(
    sweep: MirroredSweep, tmp_path: Path
) -> None:
    """An uncommitted edit of the mirror: exit 2 naming it, and no destination is written."""
    corpus = sweep.copy(tmp_path / "c")
    repo = corpus / "repo"
    (repo / MIRROR_PLAN).write_text("edited by hand\n")
    before = digests(repo, DESTINATIONS)

    done = wfbench(*apply_argv(sweep, corpus))

    assert done.returncode == 2
    assert f"{MIRROR_PLAN} changed since the evidence was recorded (compare-and-swap refused)" in done.stderr
    assert digests(repo, DESTINATIONS) == before


def test_a_file_the_overlay_adds_that_appeared_meanwhile_is_refused(
    sweep: MirroredSweep, tmp_path: Path
) -> None:
    """A destination recorded absent that now exists: compare-and-swap refuses (it would be overwritten)."""
    corpus = sweep.copy(tmp_path / "c")
    repo = corpus / "repo"
    (repo / ".claude/skills/plan/examples.md").write_text("someone else's page\n")

    done = wfbench(*apply_argv(sweep, corpus))

    assert done.returncode == 2
    assert ".claude/skills/plan/examples.md changed since the evidence was recorded" in done.stderr
    assert (repo / ".claude/skills/plan/examples.md").read_text() == "someone else's page\n"


def test_a_target_whose_committed_skill_moved_on_is_a_binding_mismatch(
    sweep: MirroredSweep, tmp_path: Path
) -> None:
    """The checked-out branch carries a newer skill (the tasks' commits do not): no longer bound to it."""
    corpus = sweep.copy(tmp_path / "c")
    repo = corpus / "repo"
    git(repo, "checkout", "-qb", "newer")
    (repo / CANONICAL_PLAN).write_text("a newer plan skill\n")
    git(repo, "commit", "-qam", "newer plan skill")

    done = wfbench(*apply_argv(sweep, corpus))

    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[0].endswith("promotion binding mismatch for target_base_digests")
    assert any(CANONICAL_PLAN in line and "committed" in line for line in lines[1:])
    assert (repo / CANONICAL_PLAN).read_text() == "a newer plan skill\n"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--mirror", "other/skills"], "promotion binding mismatch for target_base_digests"),
        (["--model", "another-model"], "promotion binding mismatch for benchmark_model"),
        (["--proposer-model", "a-proposer"], "promotion binding mismatch for proposer_model"),
        (["--effort", "low"], "promotion binding mismatch for effort"),
        (["--policy", "statistical"], "promotion binding mismatch for policy"),
    ],
)
def test_an_applier_expecting_other_bindings_refuses(
    sweep: MirroredSweep, tmp_path: Path, extra: list[str], message: str
) -> None:
    """What the applier expects (mirrors, model, proposer, effort, policy) must equal the evidence."""
    corpus = sweep.copy(tmp_path / "c")

    done = wfbench(*apply_argv(sweep, corpus, *extra))

    assert done.returncode == 2
    assert message in done.stderr
    assert digests(corpus / "repo", DESTINATIONS) == _old(sweep)


def _mutated(sweep: MirroredSweep, tmp_path: Path, change: str) -> Path:
    raw = load(sweep.evidence)
    if change == "schema":
        raw["schema_version"] = 3
    elif change == "aborted":
        raw["run_status"] = "aborted"
    elif change == "keep":
        raw["decisions"][0]["decision"] = "keep_incumbent"
    elif change == "expired":
        raw["generated_at"], raw["evidence_expires_at"] = (
            "2020-01-01T00:00:00+00:00",
            "2020-03-01T00:00:00+00:00",
        )
    elif change == "future":
        raw["generated_at"], raw["evidence_expires_at"] = (
            "2999-01-01T00:00:00+00:00",
            "2999-03-01T00:00:00+00:00",
        )
    elif change == "overlay-digest":
        raw["candidate_overlay_digest"] = "0" * 64
    elif change == "task":
        raw["selected_tasks"][0]["oracle_digest"] = "f" * 64
    elif change == "reason":
        raw["decisions"][0]["reasons"].append("trust me")
    elif change == "arms":
        raw["required_candidate_arms"] = ["candidate_workflow", "candidate_workflow_direct"]
    path = tmp_path / f"{change}.json"
    path.write_text(json.dumps(raw))
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("schema", "unsupported schema; regenerate evidence with schema 6"),
        ("aborted", "not from a complete sweep"),
        ("keep", "is keep_incumbent, not promote"),
        ("expired", "has expired"),
        ("future", "generated in the future"),
        ("overlay-digest", "promotion binding mismatch for candidate_overlay_digest"),
        ("task", "promotion binding mismatch for selected_tasks"),
        ("reason", "does not match the stored evidence"),
        ("arms", "promotion binding mismatch for required_candidate_arms"),
    ],
)
def test_every_refusal_is_a_line_naming_the_binding_and_exit_2(
    sweep: MirroredSweep, tmp_path: Path, change: str, message: str
) -> None:
    """Edited evidence: exit 2, one `wfbench: error: promote apply:` line per reason, nothing written."""
    corpus = sweep.copy(tmp_path / "c")

    done = wfbench(*apply_argv(sweep, corpus, evidence=_mutated(sweep, tmp_path, change)))

    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines
    assert all(line.startswith("wfbench: error: promote apply: ") for line in lines), lines
    assert any(message in line for line in lines), lines
    assert digests(corpus / "repo", DESTINATIONS) == _old(sweep)
    assert _changed(corpus / "repo") == set()


GATE_JSON = '{"schema": "wfbench.gate/v1", "decisions": []}'


@pytest.mark.parametrize("content", [None, "{not json", "[]", pytest.param(GATE_JSON, id="gate-json")])
def test_a_missing_or_corrupt_evidence_file_is_one_line(
    sweep: MirroredSweep, tmp_path: Path, content: str | None
) -> None:
    """No file, broken JSON, not an object, or `gate --json`'s summary: one line, exit 2, no traceback."""
    corpus = sweep.copy(tmp_path / "c")
    evidence = tmp_path / "promotion.json"
    if content is not None:
        evidence.write_text(content)

    done = wfbench(*apply_argv(sweep, corpus, evidence=evidence))

    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1
    assert "Traceback" not in done.stderr
    if content == GATE_JSON:  # the file and the field named, and what to run instead
        assert f"{evidence}: schema: is wfbench.gate/v1" in done.stderr
        assert "wfbench gate RESULTS --out FILE" in done.stderr


def test_a_symlinked_mirror_directory_is_never_written_through(sweep: MirroredSweep, tmp_path: Path) -> None:
    """`plugin` replaced by a symlink to a directory outside: refused, the outside untouched."""
    corpus = sweep.copy(tmp_path / "c")
    repo = corpus / "repo"
    outside = tmp_path / "outside"
    shutil.copytree(repo / "plugin", outside)
    shutil.rmtree(repo / "plugin")
    (repo / "plugin").symlink_to(outside)
    before = digests(
        outside, tuple(p.replace("plugin/", "", 1) for p in DESTINATIONS if p.startswith("plugin/"))
    )

    done = wfbench(*apply_argv(sweep, corpus))

    assert done.returncode == 2
    assert "destination parent plugin is a symlink" in done.stderr
    assert digests(outside, tuple(before)) == before
    assert digests(repo, tuple(p for p in DESTINATIONS if p.startswith(".claude"))) == {
        p: d for p, d in _old(sweep).items() if p.startswith(".claude")
    }


# --------------------------------------------------------------------------- crash trials


def _all_old_or_all_new(sweep: MirroredSweep, repo: Path) -> str:
    now = digests(repo, DESTINATIONS)
    if now == _old(sweep):
        return "old"
    if now == sweep.overlay_digests():
        return "new"
    return "mixed"


def test_a_kill_at_every_step_of_the_transaction_leaves_all_old_or_all_new_bytes(
    sweep: MirroredSweep, steps: list[str], tmp_path: Path
) -> None:
    """SIGKILL the real CLI after each durable step, recover with the real CLI: 20+/20+ consistent.

    Before the commit point recovery restores the old bytes; from it on, it completes the new
    ones. Either way no journal, staging file or created directory is left behind.
    """
    commit_point = steps.index("committed") + 1
    assert len(steps) >= 20, steps
    outcomes = {}
    for kill_at in range(1, len(steps) + 1):
        corpus = sweep.copy(tmp_path / f"k{kill_at}")
        repo = corpus / "repo"
        killed = killed_apply(apply_argv(sweep, corpus), kill_at)
        assert killed.returncode == -signal.SIGKILL, (kill_at, killed.stderr)
        assert steps_of(killed)[-1] == steps[kill_at - 1]
        recovered = wfbench("promote", "recover", "--target", str(repo))
        assert recovered.returncode == 0, recovered.stderr
        state = _all_old_or_all_new(sweep, repo)
        outcomes[steps[kill_at - 1]] = state
        assert state == ("old" if kill_at < commit_point else "new"), (steps[kill_at - 1], state)
        assert _state_files(repo) == ["lock"], (steps[kill_at - 1], _state_files(repo))
        assert _changed(repo) == (set() if state == "old" else set(DESTINATIONS)), steps[kill_at - 1]
    assert "mixed" not in outcomes.values()
    assert len(outcomes) == len(steps)


def test_an_apply_on_a_branch_killed_after_the_commit_point_is_committed_by_the_next_apply(
    sweep: MirroredSweep, tmp_path: Path
) -> None:
    """Killed once the new bytes are decided but before (or after) git's commit: apply again, one commit.

    From the commit point on, recovery completes the new bytes; the git commit --branch asked for
    may not exist yet. Running the same apply again commits exactly the written files on the
    branch (or recognises HEAD as this evidence's commit): the end state equals an unkilled apply's.
    """
    branch = "skills/promote-1"
    probe = killed_apply(apply_argv(sweep, sweep.copy(tmp_path / "probe"), "--branch", branch), 0)
    assert probe.returncode == 0, probe.stderr
    branch_steps = steps_of(probe)
    commit_point = branch_steps.index("committed") + 1
    assert "after-install" in branch_steps[commit_point:]
    evidence_sha = __import__("hashlib").sha256(sweep.evidence.read_bytes()).hexdigest()
    for kill_at in range(commit_point, len(branch_steps) + 1):
        corpus = sweep.copy(tmp_path / f"k{kill_at}")
        repo = corpus / "repo"
        base = git(repo, "rev-parse", "HEAD").strip()
        killed = killed_apply(apply_argv(sweep, corpus, "--branch", branch), kill_at)
        assert killed.returncode == -signal.SIGKILL, (kill_at, killed.stderr)

        again = wfbench(*apply_argv(sweep, corpus, "--branch", branch))

        step = branch_steps[kill_at - 1]
        assert again.returncode == 0, (step, again.stderr)
        assert again.stdout.startswith("already applied"), (step, again.stdout)
        assert f"on branch {branch}" in again.stdout, (step, again.stdout)
        assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == branch, step
        assert git(repo, "rev-parse", "HEAD~1").strip() == base, step
        assert f"Evidence: sha256:{evidence_sha}" in git(repo, "log", "-1", "--format=%B"), step
        assert set(git(repo, "show", "--name-only", "--format=", "HEAD").split()) == set(DESTINATIONS), step
        assert _changed(repo) == set(), step
        assert _state_files(repo) == ["lock"], step


BRANCH = "skills/promote-1"


def _committed_once_on_the_branch(
    sweep: MirroredSweep, repo: Path, base: str, step: str, branch: str = BRANCH
) -> None:
    """The end state of an unkilled ``apply --branch`` (or ``--commit`` on ``branch``): one commit of
    this evidence on top of ``base``, on ``branch``, checked out."""
    evidence_sha = __import__("hashlib").sha256(sweep.evidence.read_bytes()).hexdigest()
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == branch, step
    assert git(repo, "rev-parse", "HEAD~1").strip() == base, step
    assert f"Evidence: sha256:{evidence_sha}" in git(repo, "log", "-1", "--format=%B"), step
    assert set(git(repo, "show", "--name-only", "--format=", "HEAD").split()) == set(DESTINATIONS), step
    assert digests(repo, DESTINATIONS) == sweep.overlay_digests(), step
    assert _changed(repo) == set(), step
    assert _state_files(repo) == ["lock"], step


@pytest.mark.parametrize("how", ["--branch", "--commit"])
def test_an_apply_on_a_branch_killed_inside_its_git_commit_is_finished_by_the_next_apply(
    sweep: MirroredSweep, tmp_path: Path, how: str
) -> None:
    """SIGKILL after each git command of the commit (the branch made, HEAD not moved…): apply again.

    Among the windows: the commit object written but no ref, and (``--branch``) the branch created
    at it but ``HEAD`` still on the base branch (before, the rerun refused "branch already
    exists"). Every rerun of the same command ends like an unkilled apply: one commit of this
    evidence, on the new branch checked out (``--branch``) or on the current one (``--commit``).
    """
    extra = ["--branch", BRANCH] if how == "--branch" else ["--commit"]
    probe = killed_in_git(apply_argv(sweep, sweep.copy(tmp_path / "probe"), *extra), 0)
    assert probe.returncode == 0, probe.stderr
    calls = git_calls_of(probe)
    assert calls[-2:] == (
        ["update-ref", "symbolic-ref"] if how == "--branch" else ["symbolic-ref", "update-ref"]
    )
    assert "commit-tree" in calls, calls
    for kill_after in range(1, len(calls) + 1):
        corpus = sweep.copy(tmp_path / f"g{kill_after}")
        repo = corpus / "repo"
        base = git(repo, "rev-parse", "HEAD").strip()
        home = git(repo, "symbolic-ref", "--short", "HEAD").strip()
        killed = killed_in_git(apply_argv(sweep, corpus, *extra), kill_after)
        step = f"after git {calls[kill_after - 1]} (#{kill_after})"
        assert killed.returncode == -signal.SIGKILL, (step, killed.stderr)
        assert git_calls_of(killed) == calls[:kill_after], step

        again = wfbench(*apply_argv(sweep, corpus, *extra))

        assert again.returncode == 0, (step, again.stderr)
        assert again.stdout.startswith("already applied"), (step, again.stdout)
        assert "committed " in again.stdout, (step, again.stdout)
        _committed_once_on_the_branch(sweep, repo, base, step, BRANCH if how == "--branch" else home)


def test_a_branch_at_the_base_commit_is_taken_as_the_killed_apply_s_own_and_committed_on(
    sweep: MirroredSweep, steps: list[str], tmp_path: Path
) -> None:
    """Killed at the commit point, the branch already at HEAD's commit (it holds nothing else): apply again.

    A branch at the commit it would be created from holds no one's commits: the rerun makes the
    commit on it (compare-and-swap from that commit) and checks it out.
    """
    corpus = sweep.copy(tmp_path / "c")
    repo = corpus / "repo"
    base = git(repo, "rev-parse", "HEAD").strip()
    killed = killed_apply(apply_argv(sweep, corpus, "--branch", BRANCH), steps.index("committed") + 1)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    git(repo, "branch", BRANCH)

    again = wfbench(*apply_argv(sweep, corpus, "--branch", BRANCH))

    assert again.returncode == 0, again.stderr
    assert f"on branch {BRANCH}" in again.stdout, again.stdout
    _committed_once_on_the_branch(sweep, repo, base, "branch at base")


def _branch_state(repo: Path) -> dict[str, object]:
    """What a refused rerun must leave as it was: the branch, HEAD, the index, the files, every ref."""
    return {
        "branch": git(repo, "rev-parse", f"refs/heads/{BRANCH}").strip(),
        "head": git(repo, "symbolic-ref", "HEAD").strip(),
        "head_commit": git(repo, "rev-parse", "HEAD").strip(),
        "index": git(repo, "ls-files", "-s"),
        "files": digests(repo, DESTINATIONS),
        "refs": git(repo, "for-each-ref"),
    }


def _foreign_branch(sweep: MirroredSweep, repo: Path, kind: str, scratch: Path) -> None:
    """A branch named BRANCH that someone else made: their commit, another base, or a near miss."""
    if kind == "their-commit":
        home = git(repo, "symbolic-ref", "--short", "HEAD").strip()
        git(repo, "checkout", "-q", "-b", BRANCH)
        (repo / "NOTES.md").write_text("someone else's work\n")
        git(repo, "add", "NOTES.md")
        git(repo, "commit", "-qm", "someone else's commit")
        git(repo, "checkout", "-q", home)
    elif kind == "older-base":
        git(repo, "branch", BRANCH, "HEAD~1")
    elif kind == "checked-out":  # at HEAD's commit, but the branch the user is on: not a new one
        git(repo, "checkout", "-q", "-b", BRANCH)
    else:  # this apply's message and tree, on another parent: a near miss, not this apply's commit
        probe = sweep.copy(scratch / "probe")
        assert wfbench(*apply_argv(sweep, probe, "--branch", "probe")).returncode == 0
        message = git(probe / "repo", "log", "-1", "--format=%B")
        index = {"GIT_INDEX_FILE": str(scratch / "near-miss-index")}
        git(repo, "read-tree", "HEAD", env=index)
        git(repo, "add", "--force", *DESTINATIONS, env=index)
        tree = git(repo, "write-tree", env=index).strip()
        near = git(repo, "commit-tree", tree, "-p", "HEAD~1", "-m", message.rstrip("\n")).strip()
        git(repo, "branch", BRANCH, near)


@pytest.mark.parametrize("kind", ["their-commit", "older-base", "other-parent", "checked-out"])
def test_a_foreign_branch_of_the_same_name_is_still_refused_after_a_kill(
    sweep: MirroredSweep, steps: list[str], tmp_path: Path, kind: str
) -> None:
    """Negative control: the kill left the files uncommitted, but BRANCH holds other commits: exit 2.

    Nothing is written: the branch, HEAD, the index and every destination stay as they were.
    """
    corpus = sweep.copy(tmp_path / "c")
    repo = corpus / "repo"
    killed = killed_apply(apply_argv(sweep, corpus, "--branch", BRANCH), steps.index("committed") + 1)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert wfbench("promote", "recover", "--target", str(repo)).returncode == 0
    _foreign_branch(sweep, repo, kind, tmp_path)
    before = _branch_state(repo)

    again = wfbench(*apply_argv(sweep, corpus, "--branch", BRANCH))

    assert again.returncode == 2, (again.stdout, again.stderr)
    why = "is checked out" if kind == "checked-out" else "holds commits this apply did not make"
    assert again.stderr.strip().splitlines() == [
        f"wfbench: error: --branch: branch {BRANCH} already exists and {why}"
    ], again.stderr
    assert _branch_state(repo) == before


def test_a_kill_during_recovery_is_recovered_again(
    sweep: MirroredSweep, steps: list[str], tmp_path: Path
) -> None:
    """Killed mid-install, then killed again mid-recovery: the next recovery still completes."""
    corpus = sweep.copy(tmp_path / "c")
    repo = corpus / "repo"
    first_install = steps.index(next(s for s in steps if s.startswith("forward:"))) + 1
    assert killed_apply(apply_argv(sweep, corpus), first_install).returncode == -signal.SIGKILL

    interrupted = killed_apply(["promote", "recover", "--target", str(repo)], 1)

    assert interrupted.returncode == -signal.SIGKILL
    assert wfbench("promote", "recover", "--target", str(repo)).returncode == 0
    assert _all_old_or_all_new(sweep, repo) == "new"
    assert _state_files(repo) == ["lock"]


def test_apply_first_finishes_an_interrupted_apply(
    sweep: MirroredSweep, steps: list[str], tmp_path: Path
) -> None:
    """A kill before the commit point, then apply again: it rolls back, says so, and applies."""
    corpus = sweep.copy(tmp_path / "c")
    repo = corpus / "repo"
    assert killed_apply(apply_argv(sweep, corpus), steps.index("committed")).returncode == -signal.SIGKILL

    done = wfbench(*apply_argv(sweep, corpus))

    assert done.returncode == 0, done.stderr
    assert "recovered an interrupted apply" in done.stderr
    assert "rolled back" in done.stderr
    assert _all_old_or_all_new(sweep, repo) == "new"
