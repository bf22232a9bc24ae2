"""The SWE-bench oracle's verdict on a real-shaped library, run as the harness runs it but outside bwrap.

An imported instance's runner (``app/corpus/swebench_oracle.py``) is run on workspaces an agent could
leave: the exact upstream fix plus an extra test in the file the test patch touches (resolved:
the restore rule), a wrong fix plus a test that shadows the hidden one (not resolved), and the
forgeries of issue 25 — a ``[pytest11]`` plugin in ``*.DIST-INFO`` and ``*.dist-info``, a nested
``tests/conftest.py`` hook, ``pyproject`` ``addopts = -p …``, ``PASSED`` lines printed at exit —
each with its positive control (the same attack *does* forge a plain ``pytest`` run of the
workspace) and never resolved. The harness's guard environment (``oracle_run.python_guard_env``)
and a canary (``domain/workspace/canary.py``) are used exactly as in a cell; the end-to-end runs
under bwrap are ``tests/integration/cell/test_hostile_verdict.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.realrepo_kit import BUGGY, F2P, FIXED, P2P, REGRESSION, SUITE, WRONG, make_library
from tests.support.sweep_kit import git
from wfbench.app.cell.junit_report import read_report
from wfbench.app.cell.oracle_run import pytest_addopts, python_guard_env, write_site
from wfbench.app.corpus.swebench import Instance, import_instances
from wfbench.domain.workspace.canary import canaries_for, canary_file_name, canary_source
from wfbench.domain.workspace.oracle import (
    Canaries,
    OracleOutcome,
    OracleVerdict,
    ReportedCase,
    oracle_verdict,
)

TOKEN = "0123abcd4567ef89"
CANARIES = canaries_for(TOKEN)
TARGET = "src/intervals/__init__.py"
TESTS = "tests/test_merge.py"
#: A pytest plugin that turns every failed call into a pass (the forgery of issue 25 (a)).
FORCE = (
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    report = outcome.get_result()\n    if report.failed:\n"
    "        report.outcome = 'passed'\n        report.longrepr = None\n"
)
SHADOW = "\n\ndef test_touching_intervals_merge():\n    assert True\n"
ATEXIT = (
    "import atexit, sys\n\n\n@atexit.register\ndef _forge():\n"
    "    for arg in sys.argv:\n        if '::' in arg:\n            print('PASSED ' + arg)\n"
)


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("swe")
    made: dict[str, Any] = make_library(root)
    repos = root / "mirrors"
    repos.mkdir()
    shutil.copytree(made["repo"], repos / "acme__intervals")
    instance = Instance(
        line=1,
        instance_id="acme__intervals-12",
        repo="acme/intervals",
        base_commit=made["base"],
        patch=made["gold"],
        test_patch=made["test_patch"],
        problem_statement="merge touching intervals",
        fail_to_pass=(F2P,),
        pass_to_pass=P2P,
    )
    corpus = import_instances([instance], source="i.jsonl", repos_dir=str(repos), out_dir=str(root / "c"))
    made["corpus"] = Path(corpus).parent
    made["root"] = root
    return made


def workspace(lib: dict[str, Any], name: str, files: dict[str, str]) -> Path:
    """A clone of the base commit with ``files`` written over it (what an agent left)."""
    ws = lib["root"] / "ws" / name
    subprocess.run(["git", "clone", "-q", lib["repo"], str(ws)], check=True, capture_output=True)
    git(ws, "checkout", "-q", lib["base"])
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    return ws


def run_raw(lib: dict[str, Any], ws: Path) -> tuple[int, tuple[ReportedCase, ...] | None, str | None]:
    """The imported runner on ``ws`` with the harness's oracle environment, canaries and report:
    its exit status and the report's cases."""
    scratch = lib["root"] / "scratch" / f"{ws.name}-{uuid.uuid4().hex[:8]}"
    stage = scratch / "stage"
    shutil.copytree(lib["corpus"] / "instances/acme__intervals-12", stage)
    shutil.copy(lib["corpus"] / "oracle/swebench_oracle.py", stage)
    canary = str(stage / canary_file_name(TOKEN))
    Path(canary).write_text(canary_source(CANARIES, TOKEN))
    site = write_site(str(scratch / "site"))
    (scratch / "report").mkdir()
    env = python_guard_env(
        {"PATH": os.environ["PATH"], "HOME": str(scratch)},
        site=site,
        append=[str(ws), str(ws / "src"), str(stage)],
    )
    env.update(
        WFBENCH_ORACLE_REPORT=str(scratch / "report/junit.xml"),
        WFBENCH_ORACLE_CANARY=canary,
        PYTEST_ADDOPTS=pytest_addopts(site=site, root=str(stage), canary=canary),
    )
    runner = [sys.executable, str(stage / "swebench_oracle.py"), str(stage)]
    done = subprocess.run(runner, cwd=ws, env=env, capture_output=True, text=True, timeout=300, check=False)
    cases, problem = read_report(str(scratch / "report"))
    return done.returncode, cases, problem


def run_oracle(lib: dict[str, Any], ws: Path, canaries: Canaries | None = CANARIES) -> OracleVerdict:
    """The verdict the harness gives on ``ws`` (``canaries=None``: as if the run had no canaries)."""
    returncode, cases, problem = run_raw(lib, ws)
    return oracle_verdict(
        exit_ok=returncode == 0,
        returncode=returncode,
        report=cases,
        report_problem=problem,
        require_report=True,
        expect=[F2P, *P2P],
        canaries=canaries,
    )


def plain_pytest(ws: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Positive control: ``pytest`` run in the workspace itself, as a naive oracle would."""
    run_env = {"PATH": os.environ["PATH"], "PYTHONPATH": f"{ws}:{ws}/src", **(env or {})}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=ws, env=run_env, capture_output=True, text=True, check=False)


def test_the_upstream_fix_with_an_extra_test_in_the_touched_file_is_resolved(lib):
    extra = "\n\ndef test_nested_intervals_merge():\n    assert merge([(1, 9), (2, 3)]) == [(1, 9)]\n"
    ws = workspace(lib, "honest", {TARGET: FIXED, TESTS: SUITE + REGRESSION + extra})
    verdict = run_oracle(lib, ws)
    assert (verdict.passed, verdict.outcome) == (True, OracleOutcome.PASSED), verdict


def test_no_fix_is_tests_failed_naming_the_failing_id_for_the_author(lib):
    verdict = run_oracle(lib, workspace(lib, "noop", {}))
    assert (verdict.passed, verdict.outcome, verdict.failing_ids) == (
        False,
        OracleOutcome.TESTS_FAILED,
        (F2P,),
    )
    assert F2P.rpartition("::")[2] not in str(verdict.detail)


def test_a_wrong_fix_with_a_shadowing_test_is_not_resolved(lib):
    ws = workspace(lib, "shadow", {TARGET: WRONG, TESTS: SUITE + REGRESSION + SHADOW})
    assert plain_pytest(ws, TESTS).returncode == 0  # control: the shadow really forges a plain run
    verdict = run_oracle(lib, ws)
    assert (verdict.passed, verdict.outcome) == (False, OracleOutcome.TESTS_FAILED), verdict


@pytest.mark.parametrize("metadata", ["Wfbforce-1.0.DIST-INFO", "wfbforce-1.0.dist-info"])
def test_a_pytest11_plugin_in_package_metadata_of_any_case_does_not_forge_a_pass(lib, metadata):
    files = {
        "wfbforce_plugin.py": FORCE,
        f"{metadata}/METADATA": "Metadata-Version: 2.1\nName: wfbforce\nVersion: 1.0\n",
        f"{metadata}/entry_points.txt": "[pytest11]\nwfbforce = wfbforce_plugin\n",
    }
    ws = workspace(lib, "meta-" + metadata, files)
    (ws / TESTS).write_text(SUITE + REGRESSION)
    assert plain_pytest(ws, TESTS).returncode == 0  # control: autoload really loads the plugin
    (ws / TESTS).write_text(SUITE)
    verdict = run_oracle(lib, ws)
    assert verdict.passed is False
    assert verdict.outcome in (OracleOutcome.TESTS_FAILED, OracleOutcome.CANARY_TRIPPED), verdict


def test_a_nested_conftest_hook_does_not_forge_a_pass(lib):
    ws = workspace(lib, "conftest", {"tests/conftest.py": FORCE})
    (ws / TESTS).write_text(SUITE + REGRESSION)
    assert plain_pytest(ws, TESTS).returncode == 0  # control
    (ws / TESTS).write_text(SUITE)
    verdict = run_oracle(lib, ws)
    assert (verdict.passed, verdict.outcome) == (False, OracleOutcome.TESTS_FAILED), verdict


def test_an_ini_addopts_plugin_does_not_forge_a_pass(lib):
    pyproject = (lib["root"] / "intervals/pyproject.toml").read_text()
    forged = pyproject + '\n[tool.pytest.ini_options]\naddopts = "-p wfbforce_plugin"\n'
    ws = workspace(lib, "addopts", {"pyproject.toml": forged, "wfbforce_plugin.py": FORCE})
    (ws / TESTS).write_text(SUITE + REGRESSION)
    assert plain_pytest(ws, TESTS).returncode == 0  # control
    (ws / TESTS).write_text(SUITE)
    verdict = run_oracle(lib, ws)
    assert (verdict.passed, verdict.outcome) == (False, OracleOutcome.TESTS_FAILED), verdict


def test_passed_lines_printed_at_exit_do_not_forge_a_pass(lib):
    ws = workspace(lib, "atexit", {TARGET: ATEXIT + BUGGY})
    control = plain_pytest(ws, "-rA", F2P)
    assert f"PASSED {F2P}" in control.stdout.splitlines()[-1]  # control: the last status line is forged
    verdict = run_oracle(lib, ws)
    assert (verdict.passed, verdict.outcome) == (False, OracleOutcome.TESTS_FAILED), verdict


def test_a_blanket_exit_0_trips_the_canary(lib):
    forge = "import atexit, os\natexit.register(lambda: os._exit(0))\n"
    ws = workspace(lib, "exit0", {TARGET: forge + FIXED})
    verdict = run_oracle(lib, ws)
    assert (verdict.passed, verdict.outcome) == (False, OracleOutcome.CANARY_TRIPPED), verdict
    assert "must-fail canary" in str(verdict.detail)


# --- issue 25 §8: forgeries of our own, each with its positive control --------------------------
#: On import (the package under test is imported while pytest collects), flip every failed report.
RUNNER_PATCH = (
    "import sys\nif '_pytest.reports' in sys.modules:\n    from _pytest.reports import TestReport\n"
    "    _orig = TestReport.from_item_and_call.__func__\n\n    def _forged(cls, item, call):\n"
    "        report = _orig(cls, item, call)\n        if report.failed:\n"
    "            report.outcome, report.longrepr = 'passed', None\n        return report\n\n"
    "    TestReport.from_item_and_call = classmethod(_forged)\n"
)
#: At exit, strip every <failure>/<error> from the JUnit report pytest wrote, then exit 0.
REPORT_REWRITE = (
    "import atexit, os, re, sys\n\n\n@atexit.register\ndef _rewrite():\n"
    "    path = sys.argv[sys.argv.index('--junitxml') + 1] if '--junitxml' in sys.argv else None\n"
    "    if path and os.path.exists(path):\n        text = open(path).read()\n"
    "        text = re.sub(r'<(failure|error)\\b.*?</\\1>', '', text, flags=re.S)\n"
    "        text = re.sub(r'(failures|errors)=\"\\d+\"', '\\\\1=\"0\"', text)\n"
    "        open(path, 'w').write(text)\n        os._exit(0)\n"
)


def test_own_1_patching_the_runner_in_process_on_import_trips_the_canary(lib):
    ws = workspace(lib, "own1", {TARGET: RUNNER_PATCH + BUGGY, TESTS: SUITE + REGRESSION})
    assert plain_pytest(ws, F2P).returncode == 0  # control: the patch forges a plain run
    verdict = run_oracle(lib, ws)
    assert (verdict.passed, verdict.outcome) == (False, OracleOutcome.CANARY_TRIPPED), verdict
    assert f"the must-fail canary {CANARIES.trips} did not fail" in str(verdict.detail)


def test_own_2_weakening_a_pass_to_pass_test_the_oracle_runs_is_undone(lib):
    breaks_overlap = FIXED.replace("start <= merged[-1][1]", "start == merged[-1][1]")
    weakened = SUITE.replace("assert merge([(1, 3), (2, 5)]) == [(1, 5)]", "assert True")
    assert weakened != SUITE
    ws = workspace(lib, "own2", {TARGET: breaks_overlap, TESTS: weakened + REGRESSION})
    assert plain_pytest(ws, TESTS).returncode == 0  # control
    verdict = run_oracle(lib, ws)
    assert (verdict.passed, verdict.outcome, verdict.failing_ids) == (
        False,
        OracleOutcome.TESTS_FAILED,
        (P2P[0],),
    ), verdict


def test_own_3_a_sitecustomize_on_a_path_the_code_needs_never_runs(lib):
    hook = "import os\nos.environ['PYTEST_PLUGINS'] = 'wfbforce_plugin'\n"
    planted = {"src/sitecustomize.py": hook, "src/wfbforce_plugin.py": FORCE, TESTS: SUITE + REGRESSION}
    ws = workspace(lib, "own3", planted)
    control = plain_pytest(ws, F2P, env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONPATH": f"{ws}/src"})
    assert control.returncode == 0, control.stdout[-500:]  # control: even with autoload off it forges
    verdict = run_oracle(lib, ws)
    assert (verdict.passed, verdict.outcome) == (False, OracleOutcome.TESTS_FAILED), verdict


def test_own_4_a_tests_package_init_that_patches_the_runner_is_removed(lib):
    init = "import _pytest.reports\n" + RUNNER_PATCH
    ws = workspace(lib, "own4", {"tests/__init__.py": init, TESTS: SUITE + REGRESSION})
    assert plain_pytest(ws, F2P).returncode == 0  # control
    verdict = run_oracle(lib, ws)
    assert (verdict.passed, verdict.outcome) == (False, OracleOutcome.TESTS_FAILED), verdict


def test_own_5_rewriting_the_junit_report_at_exit_trips_the_canary(lib):
    ws = workspace(lib, "own5", {TARGET: REPORT_REWRITE + BUGGY})
    assert run_oracle(lib, ws, canaries=None).passed  # control: without canaries the rewrite forges a pass
    verdict = run_oracle(lib, ws)
    assert (verdict.passed, verdict.outcome) == (False, OracleOutcome.CANARY_TRIPPED), verdict


def test_the_imported_task_declares_the_report_the_expected_ids_and_a_verify_of_base_tests(lib):
    """verify runs the PASS_TO_PASS ids that exist at the base commit (before: ``true`` whenever the
    test patch touched their file); the oracle declares ``report: junit`` and ``expect``."""
    [task] = yaml.safe_load((lib["corpus"] / "corpus.yaml").read_text())["tasks"]
    assert task["verify"] == "python -m pytest -q -p no:cacheprovider " + " ".join(P2P)
    assert (task["oracle"]["report"], task["oracle"]["expect"]) == ("junit", [F2P, *P2P])
    restored = json.loads((lib["corpus"] / "instances/acme__intervals-12/restore.json").read_text())["files"]
    assert set(restored) == {"tests/test_merge.py", "tests/__init__.py", "pyproject.toml"}
    assert restored["tests/__init__.py"] is None  # absent at base: removed if the agent adds one


def test_the_imported_corpus_names_its_clone_by_a_path_relative_to_itself(lib):
    """Portable: the corpus and its clones can move together (no absolute ``repo:``)."""
    from wfbench.app.corpus.corpus import load_corpus

    text = (lib["corpus"] / "corpus.yaml").read_text()
    assert "repo: ../mirrors/acme__intervals\n" in text
    assert str(lib["root"]) not in text
    loaded = load_corpus(str(lib["corpus"] / "corpus.yaml"))
    assert loaded.tasks[0].repo == str(lib["root"] / "mirrors" / "acme__intervals")
