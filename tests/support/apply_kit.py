"""A sweep whose promotion can be applied, and helpers to apply it (and kill the apply) for real.

``mirrored_sweep`` builds a corpus from the demo's repository with a mirror of the skills
committed at ``plugin/skills`` (declared as the corpus's ``skill_mirrors``), runs the paired
sweep (``workflow`` vs ``candidate_workflow``, the two implementation tasks, 3 runs) through
``wfbench run``, and returns the corpus directory and the sweep's output. Each test applies to
its own copy of the corpus directory, so the repository starts at the measured commit.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import yaml

from tests.support.demo_run import WFBENCH, wfbench
from tests.support.tmp_guard import scratch_env

MIRROR = "plugin/skills"
CANONICAL_PLAN = ".claude/skills/plan/SKILL.md"
MIRROR_PLAN = f"{MIRROR}/plan/SKILL.md"
SKILLS = (".claude/skills/plan/SKILL.md", ".claude/skills/work/SKILL.md", ".claude/skills/review/SKILL.md")
#: The overlay the sweep measures: the demo's concise plan skill, plus two files it adds (one in a
#: new directory), so a transaction replaces, adds and creates directories at both locations.
ADDED = (".claude/skills/plan/examples.md", ".claude/skills/plan/references/checklist.md")
OVERLAY_FILES = (CANONICAL_PLAN, *ADDED)
STATE_DIR = ".git/wfbench-apply"

#: Run by the crash trials: the real `wfbench` CLI, SIGKILLed after its N-th durable step
#: (0: never). Every step name is printed (flushed) before the kill so the parent can count them.
KILL_AT_STEP = """
import os, signal, sys
from wfbench.adapters.repo import skill_transaction as transaction
kill_at, seen = int(sys.argv[1]), []
def step(self, name):
    seen.append(name)
    print("STEP " + name, flush=True)
    if len(seen) == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
transaction.SkillTransaction._step = step
from wfbench.cli.main import main
main(sys.argv[2:])
"""

#: Run by the git crash trials: the real CLI, SIGKILLed right after the N-th git command it runs
#: from the transaction's commit point on (0: never), or after the first one named ``argv[1]``
#: (``update-ref``), i.e. inside the apply's git commit; each command's name is printed (flushed)
#: first. git itself always finishes: what is cut is wfbench.
KILL_AFTER_GIT = """
import os, signal, sys
from wfbench.adapters.repo import skill_target as target, skill_transaction as transaction
when, armed, seen = sys.argv[1], [], []
def name_of(args):
    rest = list(args)
    while rest and rest[0] == "-c":
        rest = rest[2:]
    return rest[0] if rest else "?"
def watched(real):
    def call(args, *more, **options):
        out = real(args, *more, **options)
        if armed:
            seen.append(name_of(args))
            print("GIT " + seen[-1], flush=True)
            if seen[-1] == when if not when.isdigit() else len(seen) == int(when):
                os.kill(os.getpid(), signal.SIGKILL)
        return out
    return call
target.checked_git, target.run_git = watched(target.checked_git), watched(target.run_git)
step = transaction.SkillTransaction._step
def arming(self, name):
    if name == "committed":
        armed.append(name)
    step(self, name)
transaction.SkillTransaction._step = arming
from wfbench.cli.main import main
main(sys.argv[2:])
"""


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run git in ``repo`` (a fixed identity, plus ``env``); its stdout."""
    full = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(repo),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        **(env or {}),
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=full, check=True
    )
    return done.stdout


@attrs.frozen
class MirroredSweep:
    """The corpus directory (``corpus.yaml``, ``repo``, ``overlay``) and the sweep's output."""

    corpus_dir: Path
    out: Path
    run: subprocess.CompletedProcess[str]

    @property
    def evidence(self) -> Path:
        return self.out / "promotion.json"

    def copy(self, dest: Path) -> Path:
        """A fresh copy of the corpus directory (its repository at the measured commit)."""
        shutil.copytree(self.corpus_dir, dest, symlinks=True)
        return dest

    def overlay_digests(self) -> dict[str, str]:
        """Every destination → the sha256 of the bytes the overlay puts there."""
        out = {}
        for rel in OVERLAY_FILES:
            digest = hashlib.sha256((self.corpus_dir / "overlay-plus" / rel).read_bytes()).hexdigest()
            out[rel] = out[rel.replace(".claude/skills", MIRROR, 1)] = digest
        return out


def build_mirrored_sweep(base: Path) -> MirroredSweep:
    """Materialize the demo, add the mirror, write the corpus and run the paired sweep."""
    from wfbench.demo import materialize

    corpus_dir = base / "corpus"
    materialize(str(corpus_dir))
    repo = corpus_dir / "repo"
    for skill in SKILLS:
        mirrored = repo / MIRROR / skill.split("/", 2)[2]
        mirrored.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(repo / skill, mirrored)
    git(repo, "add", MIRROR)
    git(repo, "commit", "-qm", "ship a copy of the skills in the plugin")
    raw = yaml.safe_load((corpus_dir / "corpus.yaml").read_text())
    raw["tasks"] = [task for task in raw["tasks"] if task["id"] in ("fix-median", "add-mode")]
    raw["skill_mirrors"] = [MIRROR]
    overlay = corpus_dir / "overlay-plus"
    shutil.copytree(corpus_dir / "overlay", overlay)
    for number, rel in enumerate(ADDED):
        (overlay / rel).parent.mkdir(parents=True, exist_ok=True)
        (overlay / rel).write_text(f"# Extra {number}\n\nOne more page of the concise plan skill.\n")
    # Two tasks are too few for the statistical policy: this sweep is decided by the reference rule.
    paired = {
        "arms": ["workflow", "candidate_workflow"],
        "runs": 3,
        "candidate_overlay": overlay.name,
        "policy": "reference",
    }
    raw["defaults"] = {**raw["defaults"], **paired}
    (corpus_dir / "corpus.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    out = base / "sweep"
    run = wfbench("run", str(corpus_dir / "corpus.yaml"), "--out", str(out), "--workers", "3", timeout=600)
    return MirroredSweep(corpus_dir=corpus_dir, out=out, run=run)


def apply_argv(sweep: MirroredSweep, corpus: Path, *extra: str, evidence: Path | None = None) -> list[str]:
    """`promote apply` arguments for ``sweep``'s evidence against the corpus copy ``corpus``."""
    return [
        "promote",
        "apply",
        str(evidence or sweep.evidence),
        "--corpus",
        str(corpus / "corpus.yaml"),
        "--target",
        str(corpus / "repo"),
        *extra,
    ]


def killed_apply(argv: list[str], kill_at: int, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The real CLI run with a SIGKILL after its ``kill_at``-th durable step (0: never)."""
    return _run_killer(KILL_AT_STEP, str(kill_at), argv, timeout)


def killed_in_git(
    argv: list[str], kill_after: int | str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """The real CLI run with a SIGKILL after the ``kill_after``-th git command of its commit (0: never),
    or after its first git command of that name."""
    return _run_killer(KILL_AFTER_GIT, str(kill_after), argv, timeout)


def _run_killer(script: str, when: str, argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """The killed CLI's temporary directories (``wfbench-apply-*``, ``wfbench-index-*``) go to a
    scratch TMPDIR removed here: a SIGKILLed process cannot remove them itself."""
    with scratch_env() as env:
        return subprocess.run(
            [sys.executable, "-c", script, when, *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=env,
        )


def git_calls_of(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The git commands a (killed) run printed from its commit point on."""
    return [line[4:] for line in done.stdout.splitlines() if line.startswith("GIT ")]


def steps_of(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The step names a (killed) run printed."""
    return [line[5:] for line in done.stdout.splitlines() if line.startswith("STEP ")]


def digests(repo: Path, paths: tuple[str, ...]) -> dict[str, str | None]:
    """sha256 of each path in the working tree (None: missing)."""
    out: dict[str, str | None] = {}
    for path in paths:
        target = repo / path
        out[path] = hashlib.sha256(target.read_bytes()).hexdigest() if target.is_file() else None
    return out


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


__all__ = [
    "ADDED",
    "CANONICAL_PLAN",
    "OVERLAY_FILES",
    "MIRROR",
    "MIRROR_PLAN",
    "STATE_DIR",
    "WFBENCH",
    "MirroredSweep",
    "apply_argv",
    "build_mirrored_sweep",
    "digests",
    "git",
    "git_calls_of",
    "killed_apply",
    "killed_in_git",
    "load",
    "steps_of",
]
