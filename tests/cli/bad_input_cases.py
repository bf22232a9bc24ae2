"""The bad-input matrix: malformed inputs, the command that reads each, and what its error must name.

Each :class:`Case` writes its input into a fresh directory and returns the ``wfbench`` arguments
that read it. ``names`` are the substrings the one ``wfbench: error:`` line must contain: the
file (or option), the id or line, and the field. Used by ``tests/cli/test_bad_input_matrix.py``
and by ``python -m tests.cli.test_bad_input_matrix --table`` (the table in
``docs/reliability.md``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import yaml

#: A key whose value is this is left out of the task.
DROP = object()
CORPUS = "corpus.yaml"
SCRIPT = "script.yaml"
ARTIFACT = "review-output.json"
LABELS = "labels.json"
RESULTS = "results.jsonl"
OUT = "out"


#: The command each group of cases runs (the others run ``wfbench run``).
COMMANDS = {
    "corpus": "tasks check",
    "provider": "provider serve",
    "review": "review score",
    "labels": "review score",
    "results": "gate",
    "report": "report",
}


@attrs.frozen
class Env:
    """What every case may refer to: a git repository (branch ``main``) and the sentinel model URL."""

    repo: str
    base_url: str


Build = Callable[[Path, Env], list[str]]


@attrs.frozen
class Case:
    """One malformed input: how to write it, the command that reads it, what the error must name."""

    id: str
    group: str
    what: str
    build: Build
    names: tuple[str, ...]
    #: Paths (relative to the case directory) the command may create; anything else fails.
    may_create: tuple[str, ...] = ()

    @property
    def command(self) -> str:
        """``tasks check``, ``run``, ``provider serve``, ``review score``, ``gate`` or ``report``."""
        return COMMANDS.get(self.group, "run")


# --- writers ----------------------------------------------------------------------------------


def write(path: Path, content: str | bytes) -> Path:
    """Write ``content`` (text or bytes) at ``path``, creating parent directories."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def task(env: Env, **overrides: Any) -> dict[str, Any]:
    """A valid implementation task ``t1``, with ``overrides`` applied (``DROP`` removes a key)."""
    base: dict[str, Any] = {
        "id": "t1",
        "class": "bug-fix",
        "repo": env.repo,
        "ref": "main",
        "prompt": "Fix it.",
        "verify": "true",
        "oracle": {"command": "true", "files": [{"source": "oracles/o.py", "target": "test_o.py"}]},
    }
    base.update(overrides)
    return {key: value for key, value in base.items() if value is not DROP}


def corpus(d: Path, env: Env, tasks: list[dict[str, Any]] | None = None, **top: Any) -> Path:
    """Write ``corpus.yaml`` (default: one valid task) and the oracle file it names."""
    write(d / "oracles" / "o.py", "def test_o():\n    assert True\n")
    document = {"tasks": [task(env)] if tasks is None else tasks, **top}
    return write(d / CORPUS, yaml.safe_dump(document, sort_keys=False))


def check(build: Callable[[Path, Env], object]) -> Build:
    """``wfbench tasks check corpus.yaml`` after ``build`` wrote the corpus."""

    def argv(d: Path, env: Env) -> list[str]:
        build(d, env)
        return ["tasks", "check", CORPUS]

    return argv


def check_task(**overrides: Any) -> Build:
    """``tasks check`` of a corpus whose one task has ``overrides``."""
    return check(lambda d, env: corpus(d, env, [task(env, **overrides)]))


def check_text(text: str | bytes) -> Build:
    """``tasks check`` of a corpus file with exactly this content."""
    return check(lambda d, env: (corpus(d, env), write(d / CORPUS, text)))


def run_args(env: Env, *extra: str) -> list[str]:
    """``wfbench run`` with no containment needed (nothing may run) and the sentinel endpoint."""
    return [
        "run",
        CORPUS,
        "--sandbox",
        "host-unsafe",
        "--model",
        "m",
        "--out",
        OUT,
        "--base-url",
        env.base_url,
        "--workers",
        "1",
        *extra,
    ]


def run_with(build: Callable[[Path, Env], object], *extra: str) -> Build:
    """``wfbench run`` of the corpus ``build`` wrote."""

    def argv(d: Path, env: Env) -> list[str]:
        build(d, env)
        return run_args(env, *extra)

    return argv


def overlay(files: dict[str, str | None]) -> Build:
    """``wfbench run`` with a candidate overlay holding ``files`` (``None``: a symlink to /etc/passwd)."""

    def argv(d: Path, env: Env) -> list[str]:
        corpus(d, env)
        (d / "overlay").mkdir()
        for rel, text in files.items():
            path = d / "overlay" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if text is None:
                os.symlink("/etc/passwd", path)
            else:
                write(path, text)
        return run_args(env, "--arms", "workflow,candidate_workflow", "--candidate-overlay", "overlay")

    return argv


def turn(**fields: Any) -> str:
    """A provider script whose one rule's one turn is ``fields``."""
    return yaml.safe_dump({"conversations": [{"when": ["Fix"], "turns": [fields]}]})


def serve(text: str) -> Build:
    """``wfbench provider serve script.yaml`` (a bad script is refused before serving)."""

    def argv(d: Path, env: Env) -> list[str]:
        del env
        write(d / SCRIPT, text)
        return ["provider", "serve", SCRIPT]

    return argv


FINDING = {
    "id": "f1",
    "severity": "high",
    "path": "calc/stats.py",
    "line": 3,
    "end_line": 4,
    "category": "correctness",
    "scenario": "median([1, 2]) is 2.",
    "evidence": "values[n // 2]",
    "recommendation": "Average the middle pair.",
    "blocking": True,
}
LABEL = {
    "id": "L1",
    "severity": "high",
    "path": "calc/stats.py",
    "line_start": 3,
    "line_end": 4,
    "category": "correctness",
}
GOOD_LABELS = json.dumps({"schema_version": 1, "findings": [LABEL]})


def artifact_doc(**finding: Any) -> str:
    """A request_changes artifact whose one finding has ``finding`` overrides."""
    return json.dumps(
        {"schema_version": 1, "verdict": "request_changes", "findings": [{**FINDING, **finding}]}
    )


def score(
    artifact: str | bytes | None, labels: str | bytes | None = GOOD_LABELS, *, link: bool = False
) -> Build:
    """``wfbench review score review-output.json labels.json`` (``None``: the file is absent)."""

    def argv(d: Path, env: Env) -> list[str]:
        del env
        if artifact is not None:
            write(d / ("real.json" if link else ARTIFACT), artifact)
        if link:
            os.symlink("real.json", d / ARTIFACT)
        if labels is not None:
            write(d / LABELS, labels)
        return ["review", "score", ARTIFACT, LABELS]

    return argv


ROW = {"task": "t1", "arm": "baseline", "run": 0, "ok": True, "resolved": True, "error_kind": None}


def row(**fields: Any) -> str:
    """One valid row line with ``fields`` overrides (``DROP`` removes a key)."""
    merged = {key: value for key, value in {**ROW, **fields}.items() if value is not DROP}
    return json.dumps(merged) + "\n"


def gate(content: str | bytes | None, *, as_dir: bool = False, command: str = "gate") -> Build:
    """``wfbench gate results.jsonl`` (or the directory holding it; ``None``: no results.jsonl)."""

    def argv(d: Path, env: Env) -> list[str]:
        del env
        (d / "sweep").mkdir()
        if content is not None:
            write(d / "sweep" / RESULTS, content)
        return [command, "sweep" if as_dir else f"sweep/{RESULTS}"]

    return argv


def resume(content: str) -> Build:
    """``wfbench run --resume out`` where ``out/results.jsonl`` is ``content``."""

    def argv(d: Path, env: Env) -> list[str]:
        corpus(d, env)
        write(d / OUT / RESULTS, content)
        return run_args(env, "--arms", "baseline", "--resume", OUT)

    return argv


# --- special corpora --------------------------------------------------------------------------


def _plain_dir_repo(d: Path, env: Env) -> None:
    (d / "plain").mkdir()
    corpus(d, env, [task(env, repo="plain")])


def _oracle_symlink(d: Path, env: Env) -> None:
    corpus(
        d,
        env,
        [task(env, oracle={"command": "true", "files": [{"source": "oracles/link.py", "target": "t.py"}]})],
    )
    os.symlink("o.py", d / "oracles" / "link.py")


def _oracle_files(count: int, size: int) -> Callable[[Path, Env], None]:
    def build(d: Path, env: Env) -> None:
        files = [{"source": f"oracles/o{n}.py", "target": f"test_o{n}.py"} for n in range(count)]
        corpus(d, env, [task(env, oracle={"command": "true", "files": files})])
        for n in range(count):
            write(d / "oracles" / f"o{n}.py", "#" * size)

    return build


def _oracle(source: str) -> dict[str, Any]:
    return {"command": "true", "files": [{"source": source, "target": "test_x.py"}]}


def _review(**overrides: Any) -> Callable[[Path, Env], None]:
    def build(d: Path, env: Env) -> None:
        write(d / "oracles" / "labels.json", GOOD_LABELS)
        corpus(d, env, [task(env, kind="review", oracle=DROP, **overrides)])

    return build


def _arms(arms: dict[str, Any]) -> Callable[[Path, Env], object]:
    return lambda d, env: corpus(d, env, arms=arms)


def _run_script(text: str | None) -> Build:
    def argv(d: Path, env: Env) -> list[str]:
        corpus(d, env)
        if text is not None:
            write(d / SCRIPT, text)
        args = run_args(env, "--arms", "baseline", "--provider-script", SCRIPT)
        return [arg for arg in args if arg not in ("--base-url", env.base_url)]

    return argv


RESUME_OUT = (f"{OUT}/.wfbench.lock", f"{OUT}/wfbench.log")
RUN_OUT = (OUT, f"{OUT}/.wfbench.lock", f"{OUT}/wfbench.log")
DEEP = "[" * 5000 + "\n"

C = Case
T1 = "conversations[0].turns[0]"
LABELS_OF = "schema_version"

# fmt: off
CASES: tuple[Case, ...] = (
    # corpora: syntax and shape
    C("corpus-yaml-syntax-error", "corpus", "corpus YAML with an unclosed flow sequence",
      check_text("tasks:\n  - id: t1\n    class: [bug\n"), (CORPUS, "not valid YAML", "line 4")),
    C("corpus-deeply-nested-yaml", "corpus", "corpus YAML nested 5000 levels deep",
      check_text(DEEP), (CORPUS, "not valid YAML", "nest")),
    C("corpus-not-a-mapping", "corpus", "corpus is a YAML list",
      check_text("- a\n- b\n"), (CORPUS, "`tasks`")),
    C("corpus-empty-tasks", "corpus", "`tasks: []`", check_text("tasks: []\n"), (CORPUS, "`tasks`")),
    C("corpus-not-utf8", "corpus", "corpus bytes are not UTF-8",
      check_text(b"tasks:\n - id: \xff\n"), (CORPUS, "utf-8", "position 14")),
    C("corpus-unknown-top-key", "corpus", "unknown top-level key",
      check(lambda d, env: corpus(d, env, colour="red")), (CORPUS, "colour", "unknown key")),
    # corpora: task fields
    C("task-missing-id", "corpus", "task without `id`", check_task(id=DROP), (CORPUS, "task #1", "id")),
    C("task-bad-id", "corpus", "task id `../evil`", check_task(id="../evil"), (CORPUS, "task #1", "id")),
    C("task-missing-prompt", "corpus", "task without `prompt`",
      check_task(prompt=DROP), (CORPUS, "t1", "prompt")),
    C("task-unknown-key", "corpus", "task with unknown key `timeout`",
      check_task(timeout=5), (CORPUS, "t1", "timeout", "unknown key")),
    C("task-bad-kind", "corpus", "task `kind: refactor`",
      check_task(kind="refactor"), (CORPUS, "t1", "kind")),
    C("tasks-duplicate-id", "corpus", "two tasks with id `t1`",
      check(lambda d, env: corpus(d, env, [task(env), task(env)])), (CORPUS, "t1", "id", "duplicate")),
    C("task-repo-missing", "corpus", "`repo` names no directory",
      check_task(repo="no-such-repo"), (CORPUS, "t1", "repo", "no-such-repo")),
    C("task-repo-not-git", "corpus", "`repo` is a directory but not a git repository",
      check(_plain_dir_repo), (CORPUS, "t1", "repo", "not a git repository")),
    C("task-ref-unresolvable", "corpus", "`ref` names no commit",
      check_task(ref="no-such-branch"), (CORPUS, "t1", "ref", "no-such-branch")),
    C("task-dependency-absolute", "corpus", "a dependency with an absolute path",
      check_task(dependencies=["/etc"]), (CORPUS, "t1", "dependencies[0]")),
    # corpora: oracles and labels
    C("task-oracle-missing", "corpus", "implementation task without `oracle`",
      check_task(oracle=DROP), (CORPUS, "t1", "oracle", "required")),
    C("task-oracle-extra-key", "corpus", "`oracle` with an extra key `timeout`",
      check_task(oracle={"command": "true", "files": [], "timeout": 3}), (CORPUS, "t1", "oracle")),
    C("oracle-file-missing", "corpus", "oracle file that does not exist",
      check_task(oracle=_oracle("oracles/missing.py")),
      (CORPUS, "t1", "oracle.files", "oracles/missing.py")),
    C("oracle-file-symlink", "corpus", "oracle file that is a symlink",
      check(_oracle_symlink), (CORPUS, "t1", "oracle.files", "symlink")),
    C("oracle-file-outside-corpus", "corpus", "oracle source `../outside.py`",
      check_task(oracle=_oracle("../outside.py")), (CORPUS, "t1", "oracle.files", "../outside.py")),
    C("oracle-too-many-files", "corpus", "nine oracle files (limit 8)",
      check(_oracle_files(9, 10)), (CORPUS, "t1", "oracle.files", "8")),
    C("oracle-file-too-large", "corpus", "a 600 KiB oracle file (limit 512 KiB)",
      check(_oracle_files(1, 600 * 1024)), (CORPUS, "t1", "oracle.files", "oracles/o0.py", "limit")),
    C("review-task-without-labels", "corpus", "review task without `labels`",
      check(_review()), (CORPUS, "t1", "labels", "required")),
    C("review-labels-file-missing", "corpus", "review task whose labels file does not exist",
      check(_review(labels="oracles/nope.json")), (CORPUS, "t1", "oracle.files", "oracles/nope.json")),
    # corpora: arms and defaults
    C("defaults-unknown-arm", "corpus", "`defaults.arms` names an unknown arm",
      check(lambda d, env: corpus(d, env, defaults={"arms": ["nope"]})), (CORPUS, "defaults.arms", "nope")),
    C("arm-prompt-without-task", "corpus", "a corpus arm whose phase prompt lacks `{task}`",
      check(_arms({"mine": {"phases": [{"prompt": "do it"}]}})), (CORPUS, "arm mine", "phases[0].prompt")),
    C("arm-unknown-incumbent", "corpus", "a candidate arm whose incumbent does not exist",
      check(_arms({"cand": {"incumbent": "ghost", "phases": [{"prompt": "{task}"}]}})),
      (CORPUS, "arm cand", "incumbent", "ghost")),
    C("corpus-provider-script-missing", "corpus", "`provider_script` names no file",
      check(lambda d, env: corpus(d, env, provider_script="nope.yaml")),
      (CORPUS, "provider_script", "nope.yaml")),
    C("corpus-provider-script-invalid", "corpus", "`provider_script` names a script with negative usage",
      check(lambda d, env: (write(d / SCRIPT, turn(usage={"output_tokens": -1})),
                            corpus(d, env, provider_script=SCRIPT))),
      (SCRIPT, T1, "usage.output_tokens")),
    # wfbench run: the same loader, then arms, binding and the endpoint; nothing may start
    C("run-duplicate-task-id", "run", "`wfbench run` of a corpus with a duplicate id",
      run_with(lambda d, env: corpus(d, env, [task(env), task(env)]), "--arms", "baseline"),
      (CORPUS, "t1", "id", "duplicate"), RUN_OUT),
    C("run-unknown-arm", "run", "`--arms baseline,nope`",
      run_with(corpus, "--arms", "baseline,nope"), ("--arms", "nope"), RUN_OUT),
    C("run-candidate-without-incumbent", "run", "`--arms candidate_workflow` alone",
      run_with(corpus, "--arms", "candidate_workflow"), ("--arms", "candidate_workflow", "workflow"),
      RUN_OUT),
    C("run-ref-unresolvable", "run", "`wfbench run` of a task whose ref names no commit",
      run_with(lambda d, env: corpus(d, env, [task(env, ref="nope")]), "--arms", "baseline"),
      (CORPUS, "t1", "ref", "nope"), RUN_OUT),
    # candidate overlays
    C("overlay-non-markdown", "overlay", "overlay file `.claude/skills/work/helper.sh`",
      overlay({".claude/skills/work/helper.sh": "echo hi\n"}),
      ("overlay", ".claude/skills/work/helper.sh"), RUN_OUT),
    C("overlay-outside-skills", "overlay", "overlay file `README.md` outside the skill directories",
      overlay({"README.md": "# hi\n"}), ("overlay", "README.md", ".claude/skills"), RUN_OUT),
    C("overlay-unevaluated-skill", "overlay", "overlay Markdown for a skill no chosen arm evaluates",
      overlay({".claude/skills/deploy/SKILL.md": "# deploy\n"}),
      ("overlay", ".claude/skills/deploy/SKILL.md"), RUN_OUT),
    C("overlay-symlink", "overlay", "overlay `SKILL.md` that is a symlink to /etc/passwd",
      overlay({".claude/skills/work/SKILL.md": None}),
      ("overlay", "symlink", ".claude/skills/work/SKILL.md"), RUN_OUT),
    C("overlay-empty", "overlay", "an empty overlay directory",
      overlay({}), ("overlay", "--candidate-overlay", "no files"), RUN_OUT),
    # provider scripts
    C("script-yaml-syntax-error", "provider", "script YAML with an unclosed flow sequence",
      serve("conversations: [\n  {when: x\n"), (SCRIPT, "not valid YAML", "line 3")),
    C("script-deeply-nested-yaml", "provider", "script YAML nested 5000 levels deep",
      serve(DEEP), (SCRIPT, "not valid YAML", "nest")),
    C("script-unknown-top-key", "provider", "unknown top-level key `replies`",
      serve("replies: []\n"), (SCRIPT, "replies", "unknown key")),
    C("script-unknown-turn-key", "provider", "a turn with unknown key `colour`",
      serve(turn(colour="red")), (SCRIPT, T1, "colour")),
    C("script-status-not-error", "provider", "a turn with `status: 200`",
      serve(turn(status=200)), (SCRIPT, T1, "status")),
    C("script-status-wrong-type", "provider", 'a turn with `status: "529"`',
      serve(turn(status="529")), (SCRIPT, T1, "status")),
    C("script-negative-usage", "provider", "`usage.output_tokens: -5`",
      serve(turn(usage={"output_tokens": -5})), (SCRIPT, T1, "usage.output_tokens")),
    C("script-stop-reason-list", "provider", "`stop_reason: [end_turn]` (a list)",
      serve(turn(stop_reason=["end_turn"])), (SCRIPT, T1, "stop_reason")),
    C("script-empty-when", "provider", "a rule with `when: []`",
      serve(yaml.safe_dump({"conversations": [{"when": [], "turns": [{"say": "x"}]}]})),
      (SCRIPT, "conversations[0]", "when")),
    C("run-script-missing", "provider-run", "`wfbench run --provider-script` naming no file",
      _run_script(None), (SCRIPT, "cannot read"), RUN_OUT),
    C("run-script-negative-usage", "provider-run", "`wfbench run --provider-script` with negative usage",
      _run_script(turn(usage={"input_tokens": -1})), (SCRIPT, T1, "usage.input_tokens"), RUN_OUT),
    # review artifacts (wfbench review score)
    C("artifact-not-json", "review", 'artifact `{"verdict": `',
      score('{"verdict": '), (ARTIFACT, "not valid JSON", "line 1")),
    C("artifact-duplicate-key", "review", "artifact with `verdict` twice",
      score('{"schema_version": 1, "verdict": "approve", "verdict": "comment", "findings": []}'),
      (ARTIFACT, "Duplicate object key", "verdict")),
    C("artifact-missing-findings", "review", "artifact without `findings`",
      score('{"schema_version": 1, "verdict": "approve"}'), (ARTIFACT, "findings")),
    C("artifact-line-zero", "review", "finding with `line: 0`",
      score(artifact_doc(line=0)), (ARTIFACT, "findings[0].line")),
    C("artifact-path-escapes", "review", "finding with `path: ../etc/passwd`",
      score(artifact_doc(path="../etc/passwd")), (ARTIFACT, "findings[0].path")),
    C("artifact-approve-with-findings", "review", "`approve` with a finding",
      score(json.dumps({"schema_version": 1, "verdict": "approve", "findings": [FINDING]})),
      (ARTIFACT, "approve")),
    C("artifact-symlink", "review", "artifact that is a symlink",
      score(artifact_doc(), link=True), (ARTIFACT, "non-symlink")),
    C("artifact-too-large", "review", "a 300 KiB artifact (limit 256 KiB)",
      score(" " * (300 * 1024) + artifact_doc()), (ARTIFACT, "bounded")),
    C("artifact-empty", "review", "an empty artifact", score(""), (ARTIFACT, "empty")),
    C("artifact-never-written", "review", "no artifact file", score(None), (ARTIFACT, "never written")),
    C("artifact-not-utf8", "review", "artifact bytes that are not UTF-8",
      score(b'{"\xff"}'), (ARTIFACT, "UTF-8")),
    # hidden labels (wfbench review score)
    C("labels-not-json", "labels", 'labels `{"findings": [`',
      score(artifact_doc(), '{"findings": ['), (LABELS, "malformed", "line 1")),
    C("labels-duplicate-id", "labels", "two labels with id `L1`",
      score(artifact_doc(), json.dumps({LABELS_OF: 1, "findings": [LABEL, LABEL]})),
      (LABELS, "findings[1].id")),
    C("labels-inverted-range", "labels", "label with `line_end` before `line_start`",
      score(artifact_doc(), json.dumps({LABELS_OF: 1, "findings": [{**LABEL, "line_end": 1}]})),
      (LABELS, "findings[0].line_end")),
    C("labels-missing", "labels", "no labels file", score(artifact_doc(), None), (LABELS, "cannot read")),
    # results.jsonl (wfbench gate)
    C("results-torn-last-line", "results", "last line cut mid-row (no newline)",
      gate(row() + row(run=1)[:20]), (RESULTS, "line 2")),
    C("results-invalid-json-line", "results", "a line that is not JSON",
      gate(row() + "not json\n" + row(run=1)), (RESULTS, "line 2")),
    C("results-row-not-object", "results", "a line holding a JSON array",
      gate("[1, 2]\n"), (RESULTS, "line 1", "object")),
    C("results-run-wrong-type", "results", '`"run": "1"` (a string)',
      gate(row(run="1")), (RESULTS, "line 1", "run")),
    C("results-missing-task", "results", "a row without `task`",
      gate(row(task=DROP)), (RESULTS, "line 1", "task")),
    C("results-unknown-error-kind", "results", '`"error_kind": "gremlins"`',
      gate(row(error_kind="gremlins")), (RESULTS, "line 1", "error_kind", "gremlins")),
    C("results-nan-cost", "results", '`"cost_usd": NaN`',
      gate(row().replace('"ok"', '"cost_usd": NaN, "ok"')), (RESULTS, "line 1", "NaN")),
    C("results-huge-integer-cost", "results", "`cost_usd` a 400-digit integer",
      gate(row().replace('"ok"', '"cost_usd": ' + "9" * 400 + ', "ok"')), (RESULTS, "line 1", "cost_usd")),
    C("results-deeply-nested", "results", "a line nested 100000 levels deep",
      gate(row() + "[" * 100_000 + "\n"), (RESULTS, "line 2")),
    C("results-not-utf8", "results", "a line that is not UTF-8",
      gate(b'{"task": "\xff"}\n'), (RESULTS, "line 1", "UTF-8")),
    C("results-dir-without-jsonl", "results", "a directory with no results.jsonl",
      gate(None, as_dir=True), ("sweep", RESULTS)),
    C("report-invalid-json-line", "report", "`wfbench report` of a directory whose line 2 is not JSON",
      gate(row() + "not json\n", as_dir=True, command="report"), (RESULTS, "line 2")),
    # results.jsonl read by `wfbench run --resume` (after binding, before any session)
    C("resume-run-wrong-type", "resume", '`--resume` directory with `"run": "1"`',
      resume(row(run="1")), (RESULTS, "line 1", "run"), RESUME_OUT),
    C("resume-invalid-middle-line", "resume", "`--resume` directory whose line 2 of 3 is not JSON",
      resume(row() + "{oops\n" + row(run=1)), (RESULTS, "line 2"), RESUME_OUT),
)
# fmt: on
