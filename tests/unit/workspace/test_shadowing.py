"""Files that shadow test infrastructure, found in what the agent's sessions changed."""

from __future__ import annotations

from wfbench.domain.workspace.shadowing import (
    MAX_SHADOW_DIAGNOSTICS,
    has_pytest_section,
    shadowing_diagnostics,
)

F = "f:644:1:x"
BEFORE = {"app.py": F, "tests": "d:755", "tests/conftest.py": F}


def _found(after: dict[str, str], before: dict[str, str] | None = None) -> tuple[str, ...]:
    return shadowing_diagnostics(BEFORE if before is None else before, {**BEFORE, **after})


def test_nothing_planted_means_no_diagnostic() -> None:
    assert _found({"new.py": F}) == ()


def test_runner_modules_start_up_hooks_and_pth_files_are_named() -> None:
    found = _found(
        {"pytest.py": F, "sub": "d:755", "sub/sitecustomize.py": F, "usercustomize.py": F, "x.pth": F}
    )
    assert found == (
        "shadowing file: pytest.py (added): shadows the test runner",
        "shadowing file: sub/sitecustomize.py (added): runs at interpreter start-up",
        "shadowing file: usercustomize.py (added): runs at interpreter start-up",
        "shadowing file: x.pth (added): a .pth file runs at interpreter start-up from a site directory",
    )


def test_a_shadowing_package_counts_once() -> None:
    found = _found({"_pytest": "d:755", "_pytest/__init__.py": F, "_pytest/main.py": F})
    assert found == ("shadowing file: _pytest (added): shadows the test runner",)


def test_plugin_metadata_is_named() -> None:
    found = _found({"evil.dist-info": "d:755", "evil.dist-info/entry_points.txt": F})
    assert found == ("shadowing file: evil.dist-info (added): package metadata can declare a pytest plugin",)


def test_a_conftest_or_pytest_ini_added_or_changed_at_any_depth_is_named() -> None:
    why = "pytest configuration or plugin (conftest/ini)"
    assert _found({"conftest.py": F, "a/b/pytest.ini": F}) == (
        f"shadowing file: a/b/pytest.ini (added): {why}",
        f"shadowing file: conftest.py (added): {why}",
    )
    assert _found({"tests/conftest.py": "f:644:2:y"}) == (
        f"shadowing file: tests/conftest.py (modified): {why}",
    )


def test_plugin_metadata_is_named_in_any_letter_case() -> None:
    found = _found({"Evil-1.0.DIST-INFO": "d:755", "Evil-1.0.DIST-INFO/entry_points.txt": F, "x.Egg-Link": F})
    assert found == (
        "shadowing file: Evil-1.0.DIST-INFO (added): package metadata can declare a pytest plugin",
        "shadowing file: x.Egg-Link (added): package metadata can declare a pytest plugin",
    )


def test_a_shared_config_file_counts_only_when_it_holds_a_pytest_section() -> None:
    changed = {"setup.cfg": F, "pyproject.toml": F, "tox.ini": F}
    assert _found(changed) == ()
    found = shadowing_diagnostics(BEFORE, {**BEFORE, **changed}, frozenset({"pyproject.toml"}))
    assert found == (
        "shadowing file: pyproject.toml (added): a pytest section in a shared configuration file",
    )


def test_pytest_sections_are_recognised_in_ini_cfg_and_toml() -> None:
    for text in (
        "[pytest]\n",
        "x\n[tool:pytest]\naddopts=-p y\n",
        "[tool.pytest.ini_options]\n",
        " [ pytest ]",
    ):
        assert has_pytest_section(text), text
    for text in ("[metadata]\nname = pytest\n", "[tool.black]\n", "# [pytest]\n", "[pytest-x]\n"):
        assert not has_pytest_section(text), text


def test_a_deleted_conftest_is_not_named() -> None:
    assert _found({}, {**BEFORE, "tests/conftest.py": F}) == ()
    assert shadowing_diagnostics(BEFORE, {k: v for k, v in BEFORE.items() if k != "tests/conftest.py"}) == ()


def test_a_modified_pytest_py_counts_and_a_deleted_one_does_not() -> None:
    before = {**BEFORE, "pytest.py": F}
    assert shadowing_diagnostics(before, {**before, "pytest.py": "f:644:9:z"}) == (
        "shadowing file: pytest.py (modified): shadows the test runner",
    )
    assert shadowing_diagnostics(before, BEFORE) == ()


def test_past_the_limit_the_rest_is_counted() -> None:
    found = _found({f"d{i}.pth": F for i in range(MAX_SHADOW_DIAGNOSTICS + 3)})
    assert len(found) == MAX_SHADOW_DIAGNOSTICS + 1
    assert found[-1] == "shadowing file: … and 3 more"


def test_a_nested_runner_module_is_named() -> None:
    assert _found({"vendor/pytest.py": F}) == (
        "shadowing file: vendor/pytest.py (added): shadows the test runner",
    )


def test_exactly_the_limit_is_listed_without_a_count_line() -> None:
    found = _found({f"d{i}.pth": F for i in range(MAX_SHADOW_DIAGNOSTICS)})
    assert len(found) == MAX_SHADOW_DIAGNOSTICS
    assert not any("more" in line for line in found)
