"""Which arms a corpus's repository can run: the skills it has, and the tasks each arm needs.

An arm evaluates skills (``Arm.evaluated_skills``); a session asked to use a skill the
repository does not have can only end ``skill-not-invoked``. A skill is *present* when every
task repository's work tree has ``.claude/skills/<skill>/SKILL.md`` (or a copy under one of the
corpus's ``skill_mirrors``). A repository without a work tree (a bare clone or a bundle) says
nothing: every skill counts as present there, and no arm is ruled out because of it.

:func:`arm_problems` is what ``wfbench run --dry-run`` warns about (and the run refuses nothing
because of it); :func:`skill_presence` is the predicate the required-candidate-arms rule uses
(:func:`wfbench.app.corpus.arms.required_candidate_arms`), so a sweep of a one-skill repository
is never asked for an arm that cannot run there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from wfbench.app.corpus.arms import Arm
from wfbench.app.corpus.corpus import Corpus

__all__ = ["arm_problems", "skill_presence"]

SKILLS_DIR = ".claude/skills"


def _work_tree(repo: str) -> bool:
    return os.path.isdir(os.path.join(repo, ".git")) or os.path.isfile(os.path.join(repo, ".git"))


def _has(repo: str, skill: str, mirrors: Sequence[str]) -> bool:
    roots = (SKILLS_DIR, *mirrors)
    return any(os.path.isfile(os.path.join(repo, *root.split("/"), skill, "SKILL.md")) for root in roots)


def skill_presence(corpus: Corpus) -> Callable[[str], bool]:
    """``has(skill)``: every task repository with a work tree has the skill (see the module docstring)."""
    repos = sorted({task.repo for task in corpus.tasks if _work_tree(task.repo)})
    mirrors = corpus.skill_mirrors
    cache: dict[str, bool] = {}

    def has(skill: str) -> bool:
        if skill not in cache:
            cache[skill] = all(_has(repo, skill, mirrors) for repo in repos)
        return cache[skill]

    return has


def missing_skills(arm: Arm, has: Callable[[str], bool]) -> tuple[str, ...]:
    """The skills ``arm`` evaluates that the repository lacks (none for a plugin arm: it brings its own)."""
    if arm.plugin is not None:
        return ()
    return tuple(skill for skill in arm.evaluated_skills if not has(skill))


def arm_problems(corpus: Corpus, chosen: Sequence[Arm], task_kinds: Sequence[object]) -> list[str]:
    """One warning per chosen arm that cannot run: a skill the repository lacks, or no task of its kind."""
    has = skill_presence(corpus)
    problems = []
    for arm in chosen:
        lacking = missing_skills(arm, has)
        if lacking:
            where = ", ".join(f"{SKILLS_DIR}/{skill}/SKILL.md" for skill in lacking)
            problems.append(
                f"arm {arm.name} evaluates {', '.join(lacking)}, which the repository does not have"
                f" ({where}): every session would end skill-not-invoked; drop the arm from --arms"
                " or add the skill"
            )
        if arm.kind not in task_kinds:
            problems.append(
                f"arm {arm.name} runs only {arm.kind.value} tasks and the selection has none: it runs no cell"
            )
    return problems
