"""``wfbench tasks import swebench``: SWE-bench-format task instances as a wfbench corpus (docs/swebench.md).

Each instance (``instance_id``, ``repo`` ``owner/name``, ``base_commit``, ``patch``, ``test_patch``,
``problem_statement``, ``FAIL_TO_PASS``, ``PASS_TO_PASS`` — lists, or JSON-encoded strings as in the
published datasets; optional ``environment_setup_commit``, ``version``, ``hints_text``) becomes a task:

* repository: the local clone at ``REPOS/owner__name`` (a work tree or a bare mirror; also
  ``owner__name.git``), or a git bundle ``owner__name.bundle`` cloned (bare, locally) into the corpus;
  no network;
* ``ref`` = ``base_commit``; the prompt = the problem statement;
* the hidden oracle = a private copy of the agent's workspace where the files the ``test_patch``
  touches and every test-infrastructure file are restored to the base commit (SWE-bench's restore
  rule, extended), ``test_patch`` applied, then exactly the ``FAIL_TO_PASS`` and ``PASS_TO_PASS``
  tests and the harness canaries run; ``report: junit`` + ``expect:`` (all those ids): the verdict
  comes from the harness-owned JUnit report and the exit status, never from output;
* ``gold_patch`` = ``patch`` (``wfbench tasks validate`` checks each one, as SWE-bench's harness does);
* ``verify`` = the ``PASS_TO_PASS`` tests that exist at the base commit (model-visible tests that
  already pass), else ``true``;
* an environment derived from the repository (an editable install when it is a package, plus pytest),
  which ``--environment FILE`` replaces; or, with ``--images TEMPLATE``, the instance's own image
  (SWE-bench's ``swebench/sweb.eval.x86_64.<id>`` by default, ``__`` written ``_1776_``) with the
  repository at ``/testbed`` and the image's conda env ``testbed`` first on ``PATH``.

A bad instance fails the import with one line naming the file, the line and the field (exit 2);
nothing is written then.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

import attrs
import yaml

from wfbench.app.corpus.swebench_images import image_environment, image_name
from wfbench.app.corpus.swebench_oracle import is_infrastructure
from wfbench.domain.errors import InputError

REQUIRED = (
    "instance_id",
    "repo",
    "base_commit",
    "patch",
    "test_patch",
    "problem_statement",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
)
INSTANCE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
REPO_NAME = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")
ORACLE_RUNNER = "swebench_oracle.py"
_GIT_ENV = {
    "PATH": "/usr/bin:/bin",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "HOME": "/nonexistent",
}


@attrs.frozen
class Instance:
    """One validated instance (the line it came from, for messages)."""

    line: int
    instance_id: str
    repo: str
    base_commit: str
    patch: str
    test_patch: str
    problem_statement: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    version: str | None = None
    environment_setup_commit: str | None = None


def read_instances(path: str) -> tuple[Instance, ...]:
    """Every instance of a JSONL file (one object a line; a JSON array file also works).

    Raises:
        InputError: ``<file>: line N: <field>: <reason>``.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the instances: {exc}", source=path) from None
    records: list[tuple[int, Any]] = []
    if text.lstrip().startswith("["):
        try:
            records = list(enumerate(json.loads(text), 1))
        except ValueError as exc:
            raise InputError(f"not valid JSON: {exc}", source=path) from None
    else:
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append((number, json.loads(line)))
            except ValueError as exc:
                raise InputError(f"not valid JSON: {exc}", source=path, locator=f"line {number}") from None
    if not records:
        raise InputError("no instances", source=path)
    instances = [_instance(raw, number, path) for number, raw in records]
    seen: set[str] = set()
    for item in instances:
        if item.instance_id in seen:
            raise InputError(
                "duplicate instance_id", source=path, locator=f"line {item.line}", field="instance_id"
            )
        seen.add(item.instance_id)
    return tuple(instances)


def _instance(raw: Any, number: int, path: str) -> Instance:
    where = {"source": path, "locator": f"line {number}"}
    if not isinstance(raw, Mapping):
        raise InputError("must be a JSON object", **where)
    for key in REQUIRED:
        if key not in raw:
            raise InputError("is required", field=key, **where)
    for key in ("instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise InputError("must be a non-empty string", field=key, **where)
    if not INSTANCE_ID.match(raw["instance_id"]):
        raise InputError("must match [A-Za-z0-9][A-Za-z0-9._-]{0,127}", field="instance_id", **where)
    if not REPO_NAME.match(raw["repo"]):
        raise InputError("must be owner/name", field="repo", **where)
    if not COMMIT.match(raw["base_commit"]):
        raise InputError("must be a 40-hex commit id", field="base_commit", **where)
    version = raw.get("version")
    setup = raw.get("environment_setup_commit")
    if setup is not None and (not isinstance(setup, str) or not COMMIT.match(setup)):
        raise InputError("must be a 40-hex commit id", field="environment_setup_commit", **where)
    return Instance(
        line=number,
        instance_id=raw["instance_id"],
        repo=raw["repo"],
        base_commit=raw["base_commit"],
        patch=raw["patch"],
        test_patch=raw["test_patch"],
        problem_statement=raw["problem_statement"],
        fail_to_pass=_tests(raw["FAIL_TO_PASS"], "FAIL_TO_PASS", where, allow_empty=False),
        pass_to_pass=_tests(raw["PASS_TO_PASS"], "PASS_TO_PASS", where, allow_empty=True),
        version=None if version is None else str(version),
        environment_setup_commit=setup,
    )


def _tests(raw: Any, field: str, where: Mapping[str, str], *, allow_empty: bool) -> tuple[str, ...]:
    """A list of test ids, or a JSON-encoded one (the published datasets' form)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise InputError(
                "must be a list of test ids or a JSON-encoded list", field=field, **where
            ) from None
    if not isinstance(raw, list) or not all(isinstance(t, str) and t.strip() for t in raw):
        raise InputError("must be a list of test ids", field=field, **where)
    if not raw and not allow_empty:
        raise InputError("must name at least one test", field=field, **where)
    return tuple(raw)


def find_repository(repos_dir: str, repo: str, out_dir: str) -> str:
    """The local repository of ``owner/name``: ``owner__name`` (work tree or bare), ``.git``, or a bundle.

    A bundle is cloned (bare, locally) under ``out_dir/repos/``. Raises InputError (field ``repo``).
    """
    name = repo.replace("/", "__")
    for candidate in (os.path.join(repos_dir, name), os.path.join(repos_dir, name + ".git")):
        if os.path.isdir(candidate):
            return os.path.abspath(candidate)
    bundle = os.path.join(repos_dir, name + ".bundle")
    if os.path.isfile(bundle):
        dest = os.path.join(out_dir, "repos", name + ".git")
        if not os.path.isdir(dest):
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            done = subprocess.run(
                ["git", "clone", "--quiet", "--bare", "--", bundle, dest],
                capture_output=True,
                text=True,
                env=_GIT_ENV,
                check=False,
            )
            if done.returncode != 0:
                raise InputError(
                    f"cannot clone the bundle {bundle}: {done.stderr.strip()[-300:]}", field="repo"
                )
        return os.path.abspath(dest)
    looked = f"{name}, {name}.git, {name}.bundle"
    raise InputError(f"no local clone of {repo} in {repos_dir} (looked for {looked})", field="repo")


def _has_commit(repository: str, commit: str) -> bool:
    done = subprocess.run(
        ["git", "-c", "safe.directory=*", "cat-file", "-e", f"{commit}^{{commit}}"],
        cwd=repository,
        capture_output=True,
        env=_GIT_ENV,
        check=False,
    )
    return done.returncode == 0


def _is_package(repository: str, commit: str) -> bool:
    for name in ("pyproject.toml", "setup.py", "setup.cfg"):
        done = subprocess.run(
            ["git", "-c", "safe.directory=*", "cat-file", "-e", f"{commit}:{name}"],
            cwd=repository,
            capture_output=True,
            env=_GIT_ENV,
            check=False,
        )
        if done.returncode == 0:
            return True
    return False


def patched_files(patch: str) -> tuple[str, ...]:
    """Files a unified diff touches (``diff --git a/X b/Y`` headers)."""
    found = []
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            parts = line.split(" b/", 1)
            if len(parts) == 2:
                found.append(parts[1].strip())
    return tuple(found)


def touched_files(patch: str) -> tuple[str, ...]:
    """Both sides of every ``diff --git a/X b/Y`` header (a rename touches two paths)."""
    found: dict[str, None] = {}
    for line in patch.splitlines():
        if line.startswith("diff --git a/"):
            before, sep, after = line[len("diff --git a/") :].partition(" b/")
            if sep:
                found[before.strip()] = None
                found[after.strip()] = None
    return tuple(found)


def derived_environment(is_package: bool) -> dict[str, Any]:
    """An editable install (when the repository is a package) plus pytest."""
    install = ["pip install -e ."] if is_package else []
    return {"python": "harness", "install": [*install, "pip install pytest"]}


def _show(repository: str, commit: str, path: str) -> bytes | None:
    """``path``'s bytes at ``commit``, or None when the commit has no such file."""
    done = subprocess.run(
        ["git", "-c", "safe.directory=*", "cat-file", "blob", f"{commit}:{path}"],
        cwd=repository,
        capture_output=True,
        env=_GIT_ENV,
        check=False,
    )
    return done.stdout if done.returncode == 0 else None


def _tree(repository: str, commit: str) -> tuple[str, ...]:
    done = subprocess.run(
        ["git", "-c", "safe.directory=*", "ls-tree", "-r", "-z", "--name-only", commit],
        cwd=repository,
        capture_output=True,
        env=_GIT_ENV,
        check=True,
    )
    return tuple(p for p in done.stdout.decode("utf-8", "surrogateescape").split("\0") if p)


def restore_files(
    repository: str, commit: str, test_patch: str, tests: Sequence[str] = ()
) -> dict[str, str | None]:
    """What the oracle restores before it applies the test patch: path -> base64 of the base version.

    Every file the test patch touches (None: the base commit has none, so the oracle removes it),
    every file holding one of ``tests`` and the ``__init__.py`` files above it, and every
    test-infrastructure file of the base commit (docs/swebench.md, "Restore rule").
    """
    found: dict[str, str | None] = {}
    holders = [t.split("::", 1)[0] for t in tests]
    packages = [f"{d}/__init__.py" for h in holders for d in _parents(h)]
    infrastructure = [p for p in _tree(repository, commit) if is_infrastructure(p)]
    paths = [*touched_files(test_patch), *holders, *packages, *infrastructure]
    for path in dict.fromkeys(paths):
        data = _show(repository, commit, path)
        found[path] = None if data is None else base64.b64encode(data).decode("ascii")
    return found


def _parents(path: str) -> list[str]:
    """``a/b/c.py`` -> ``["a", "a/b"]``."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _exists_at_base(test: str, repository: str, commit: str) -> bool:
    """True when ``test``'s file exists at ``commit`` and defines its function (``def name``)."""
    path, _, rest = test.partition("::")
    data = _show(repository, commit, path)
    if data is None:
        return False
    name = rest.rpartition("::")[2].split("[", 1)[0]
    return not name or re.search(rf"\bdef {re.escape(name)}\b", data.decode("utf-8", "replace")) is not None


def _verify(instance: Instance, repository: str) -> str:
    """The ``PASS_TO_PASS`` tests that exist at the base commit (model-visible), else ``true``."""
    visible = [t for t in instance.pass_to_pass if _exists_at_base(t, repository, instance.base_commit)]
    if not visible:
        return "true"
    return "python -m pytest -q -p no:cacheprovider " + " ".join(shlex.quote(t) for t in visible)


def import_instances(
    instances: Sequence[Instance],
    *,
    source: str,
    repos_dir: str,
    out_dir: str,
    environment: Mapping[str, Any] | None = None,
    images: str | None = None,
) -> str:
    """Write the corpus for ``instances`` under ``out_dir``; the corpus file's path.

    ``images`` (a template, :func:`image_name`) makes each task's environment its instance image
    (``environment`` then adds to it); otherwise ``environment`` replaces the derived venv.

    Raises:
        InputError: an instance's repository or base commit is not available locally.
    """
    repos: dict[str, str] = {}
    tasks: list[dict[str, Any]] = []
    for item in instances:
        where = {"source": source, "locator": f"line {item.line}"}
        try:
            repository = repos.get(item.repo) or find_repository(repos_dir, item.repo, out_dir)
        except InputError as exc:
            raise exc.located(**where) from None
        repos[item.repo] = repository
        if not _has_commit(repository, item.base_commit):
            raise InputError(f"{item.base_commit} is not in {repository}", field="base_commit", **where)
        env = (
            image_environment(image_name(images, item.instance_id), environment)
            if images is not None
            else _venv_environment(item, repository, environment)
        )
        tasks.append(_task(item, repository, shared(env, item), out_dir=out_dir))
    files = {}
    for item in instances:
        base = f"instances/{item.instance_id}"
        files[f"{base}/gold.patch"] = item.patch
        files[f"{base}/test.patch"] = item.test_patch
        tests = {"FAIL_TO_PASS": list(item.fail_to_pass), "PASS_TO_PASS": list(item.pass_to_pass)}
        files[f"{base}/tests.json"] = json.dumps(tests, indent=2) + "\n"
        expected = (*item.fail_to_pass, *item.pass_to_pass)
        restored = restore_files(repos[item.repo], item.base_commit, item.test_patch, expected)
        files[f"{base}/restore.json"] = json.dumps({"files": restored}, indent=1, sort_keys=True) + "\n"
    files[f"oracle/{ORACLE_RUNNER}"] = (
        resources.files(__name__.rpartition(".")[0]).joinpath(ORACLE_RUNNER).read_text("utf-8")
    )
    corpus = {
        "name": os.path.basename(os.path.abspath(out_dir)),
        "defaults": {"arms": ["baseline"]},
        "tasks": tasks,
    }
    files["corpus.yaml"] = (
        f"# Imported from {os.path.basename(source)} by `wfbench tasks import swebench` (docs/swebench.md).\n"
        + yaml.safe_dump(corpus, sort_keys=False, width=100, allow_unicode=True)
    )
    for rel, text in files.items():
        path = os.path.join(out_dir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    return os.path.join(out_dir, "corpus.yaml")


def shared(env: dict[str, Any], item: Instance) -> dict[str, Any]:
    """``env`` keyed on ``owner/name@environment_setup_commit`` (SWE-bench's unit of an environment).

    Instances of one repository at one ``environment_setup_commit`` then share one build instead of
    one per base commit; an environment keyed otherwise (``key``, ``key_files``), an image with
    nothing installed on top (its own id is its identity) or an instance without the field is kept.
    """
    setup = item.environment_setup_commit
    if setup is None or "key" in env or "key_files" in env or ("image" in env and not env.get("install")):
        return env
    return {**env, "key": f"{item.repo}@{setup}"}


def _venv_environment(
    item: Instance, repository: str, environment: Mapping[str, Any] | None
) -> dict[str, Any]:
    return (
        dict(environment)
        if environment is not None
        else derived_environment(_is_package(repository, item.base_commit))
    )


def _task(item: Instance, repository: str, env: dict[str, Any], *, out_dir: str) -> dict[str, Any]:
    base = f"instances/{item.instance_id}"
    # Relative to the corpus file, as the loader reads it: the corpus and its clones move together.
    portable = os.path.relpath(os.path.abspath(repository), os.path.abspath(out_dir)).replace(os.sep, "/")
    return {
        "id": item.instance_id,
        "class": f"swebench:{item.repo}" + (f"@{item.version}" if item.version else ""),
        "kind": "implementation",
        "repo": portable,
        "ref": item.base_commit,
        "prompt": item.problem_statement,
        "verify": _verify(item, repository),
        "oracle": {
            "command": f'python "$WFBENCH_ORACLE_ROOT/{ORACLE_RUNNER}" "$WFBENCH_ORACLE_ROOT"',
            "report": "junit",
            "expect": [*item.fail_to_pass, *item.pass_to_pass],
            "files": [
                {"source": f"oracle/{ORACLE_RUNNER}", "target": ORACLE_RUNNER},
                {"source": f"{base}/test.patch", "target": "test.patch"},
                {"source": f"{base}/tests.json", "target": "tests.json"},
                {"source": f"{base}/restore.json", "target": "restore.json"},
            ],
        },
        "gold_patch": f"{base}/gold.patch",
        "environment": env,
    }
