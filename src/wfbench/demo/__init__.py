"""The built-in demo corpus: materialized into a directory as a real git repository, offline.

``tree.yaml`` holds the demo project's commits, the hidden oracles and the candidate overlay;
``corpus.yaml`` and ``provider.yaml`` are copied beside them. Commits are deterministic (fixed
author, committer and dates), so the demo's task commits are the same on every machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from importlib import resources
from typing import Any

import yaml

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "wfbench demo",
    "GIT_AUTHOR_EMAIL": "demo@wfbench.invalid",
    "GIT_COMMITTER_NAME": "wfbench demo",
    "GIT_COMMITTER_EMAIL": "demo@wfbench.invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


def _read(name: str) -> str:
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")


def _write(root: str, rel: str, text: str) -> None:
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def _git(repo: str, *args: str) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": repo, **_GIT_ENV}
    subprocess.run(["git", "-C", repo, *args], check=True, env=env, capture_output=True)


def materialize(dest: str) -> str:
    """Write the demo corpus under ``dest`` (created) and return the corpus file's path.

    An earlier materialization in ``dest`` is replaced; commits are deterministic, so the
    task commits (and every binding digest) are the same as before.
    """
    tree: dict[str, Any] = yaml.safe_load(_read("tree.yaml"))
    if os.path.isfile(os.path.join(dest, "corpus.yaml")):
        shutil.rmtree(dest)  # an earlier materialization (a resumed sweep): rebuilt identically
    os.makedirs(dest, exist_ok=True)
    for name in ("corpus.yaml", "provider.yaml"):
        _write(dest, name, _read(name))
    for name, text in tree["oracles"].items():
        _write(dest, os.path.join("oracles", name), text)
    for rel, text in tree["overlay"].items():
        _write(dest, os.path.join("overlay", rel), text)
    repo = os.path.join(dest, "repo")
    os.makedirs(repo, exist_ok=True)
    _git(repo, "init", "-q", "-b", "main")
    for commit in tree["commits"]:
        _git(repo, "checkout", "-q", "-B", commit["branch"])
        for rel, text in commit["files"].items():
            _write(repo, rel, text)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "--no-verify", "-m", commit["message"])
    _git(repo, "checkout", "-q", "main")
    return os.path.join(dest, "corpus.yaml")
