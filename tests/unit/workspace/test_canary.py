"""Harness canaries: per-cell names that say nothing, a module both pytest and unittest collect."""

from __future__ import annotations

import unittest

from wfbench.domain.workspace.canary import (
    PACKAGES_LINE,
    canaries_for,
    canary_file_name,
    canary_source,
    imported_packages,
)
from wfbench.domain.workspace.oracle import Canaries

HIDDEN = (
    "from __future__ import annotations\nimport os, json\nimport pytest\nimport calc.stats as s\n"
    "from calc.stats import median\nfrom .helpers import x\nfrom numpy.testing import assert_equal\n"
    "def test_x():\n    import late_import\n"
)


def test_the_names_come_from_the_token_and_do_not_say_which_must_fail() -> None:
    assert canaries_for("0123abcd4567ef89") == Canaries(holds="test_0123abcd", trips="test_4567ef89")
    assert canary_file_name("0123abcd4567ef89") == "test_0123abcd4567ef89.py"
    names = " ".join(canaries_for("0123abcd4567ef89").names)
    assert "canary" not in names
    assert "fail" not in names


def test_the_packages_under_test_are_the_hidden_tests_top_level_non_standard_imports() -> None:
    assert imported_packages([HIDDEN]) == ("calc", "numpy")
    assert imported_packages(["def (:", "import calc\nimport unittest, nose2\n"]) == ("calc",)
    assert imported_packages(["import a\n", "import b\nimport a\n"]) == ("a", "b")
    assert imported_packages(["\0"]) == ()


def _run(source: str) -> unittest.TestResult:
    namespace: dict[str, object] = {"__name__": "canary"}
    exec(compile(source, "canary.py", "exec"), namespace)  # noqa: S102 - the harness's own text
    [case] = [v for k, v in namespace.items() if k.startswith("Test")]
    assert isinstance(case, type)
    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(case).run(result)
    return result


def test_the_module_holds_one_passing_and_one_failing_test() -> None:
    canaries = canaries_for("aaaa1111bbbb2222")
    source = canary_source(canaries, "aaaa1111bbbb2222", ("json",))
    assert "PACKAGES = ('json',)" in source
    assert "class Testaaaa1111bbbb2222(unittest.TestCase):" in source
    result = _run(source)
    assert result.testsRun == 2
    assert [test.id().rpartition(".")[2] for test, _ in result.failures] == [canaries.trips]
    assert result.errors == []


def test_without_packages_the_runner_can_fill_the_marker_line() -> None:
    source = canary_source(canaries_for("c0ffee00deadbeef"), "c0ffee00deadbeef")
    assert source.count(PACKAGES_LINE) == 1
    broken = source.replace(PACKAGES_LINE, "PACKAGES = ('no_such_package_wfb',)")
    result = _run(broken)
    assert len(result.errors) == 1  # the must-pass canary fails when the package does not import
    assert len(result.failures) == 1


def test_a_deep_import_counts_as_its_top_level_package() -> None:
    assert imported_packages(["import a.b.c\nfrom d.e.f import g\n"]) == ("a", "d")
