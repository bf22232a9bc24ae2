"""``wfbench.domain``'s surface changes only on the record: CHANGELOG.md, docs/domain.md, and no own use.

A name added to ``__all__`` must be pinned (``tests/domain_surface.py``); a name dropped from it must
be named under "Deprecated" or "Removed" in CHANGELOG.md; every deprecated import has its
"Deprecated" entry and its row in docs/domain.md's table; nothing in ``src/``, ``tests/`` or
``bench/`` imports a deprecated path. Reads files, hence integration; the checkers have negative
controls at the end.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import wfbench.domain
from tests.domain_surface import (
    DEPRECATED_MODULES,
    DEPRECATED_NAMES,
    PUBLIC_API,
    REMOVED_IN,
    deprecated_imports,
)

ROOT = Path(__file__).resolve().parents[2]
RECORD_HEADINGS = frozenset({"Deprecated", "Removed"})
_HEADING = re.compile(r"^(#{2,3})\s+(.*?)\s*$")
_CODE = re.compile(r"`([^`\n]+)`")


def recorded_names(changelog: str, headings: Iterable[str] = RECORD_HEADINGS) -> frozenset[str]:
    """Every backticked name in the entries under a ``### <heading>`` of ``headings``, in any release."""
    wanted, current, names = frozenset(headings), None, set()
    for line in changelog.splitlines():
        heading = _HEADING.match(line)
        if heading is not None:
            current = heading.group(2) if heading.group(1) == "###" else None
        elif current in wanted:
            names.update(_CODE.findall(line))
    return frozenset(names)


def is_recorded(path: str, names: frozenset[str]) -> bool:
    """``wfbench.domain.step`` is recorded as itself or as ``step``; a module only by its full path."""
    leaf = path.removeprefix("wfbench.domain.")
    return path in names or (path not in DEPRECATED_MODULES and leaf in names)


def unrecorded_removals(public: Iterable[str], pinned: Iterable[str], changelog: str) -> list[str]:
    """The pinned public names that left ``public`` with no "Deprecated"/"Removed" entry naming them."""
    names = recorded_names(changelog)
    return sorted(
        name for name in set(pinned) - set(public) if not is_recorded(f"wfbench.domain.{name}", names)
    )


def dotted(node: ast.expr) -> str:
    """``a.b.c`` for a chain of attributes on a name, else ``""``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def deprecated_uses(source: str, deprecated: Mapping[str, str]) -> list[str]:
    """``line: path`` for each import or dotted reference of a deprecated path in ``source``."""
    leaves = {old.rsplit(".", 1)[1] for old in deprecated}
    uses = []
    for node in ast.walk(ast.parse(source)):
        paths: list[str] = []
        if isinstance(node, ast.Import):
            paths = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            paths = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Attribute) and node.attr in leaves:
            paths = [dotted(node)]
        uses += [
            f"{node.lineno}: {path}"
            for path in paths
            if any(path == old or path.startswith(f"{old}.") for old in deprecated)
        ]
    return sorted(set(uses))


def documented_deprecations(markdown: str) -> set[tuple[str, str, str]]:
    """(old import, new home, removed in) per row of the table under docs/domain.md's "Deprecated names"."""
    section = markdown.split("\n## Deprecated names", 1)[1].split("\n## ", 1)[0]
    rows = set()
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            rows.add((_CODE.findall(cells[0])[0], _CODE.findall(cells[1])[0], cells[2]))
    return rows


def _changelog() -> str:
    return (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


# --- the surface ---------------------------------------------------------------------------------


def test_a_name_joins_the_public_api_only_by_being_pinned() -> None:
    """``__all__`` grows only together with ``PUBLIC_API`` (and docs/domain.md's table of public names)."""
    assert set(wfbench.domain.__all__) - PUBLIC_API == set()


def test_a_public_name_leaves_the_api_only_with_a_deprecated_or_removed_changelog_entry() -> None:
    """A pinned name missing from ``__all__`` is named under "Deprecated" or "Removed" in CHANGELOG.md."""
    assert unrecorded_removals(wfbench.domain.__all__, PUBLIC_API, _changelog()) == []


def test_every_deprecated_import_has_its_deprecated_entry_in_the_changelog() -> None:
    """Each name and module #9 dropped is named under "Deprecated" (as ``wfbench.domain.X`` or ``X``)."""
    names = recorded_names(_changelog(), {"Deprecated"})

    assert [path for path in deprecated_imports() if not is_recorded(path, names)] == []


def test_docs_domain_md_lists_every_deprecated_import_with_its_new_home_and_release() -> None:
    """docs/domain.md's deprecation table is exactly the pinned deprecations, with the pinned release."""
    markdown = (ROOT / "docs" / "domain.md").read_text(encoding="utf-8")

    expected = {(old, home, REMOVED_IN) for old, home in deprecated_imports().items()}

    assert documented_deprecations(markdown) == expected


def test_nothing_in_src_tests_or_bench_imports_a_deprecated_path() -> None:
    """wfbench does not rely on what it deprecated (its own tests exercise the paths only from strings)."""
    uses = [
        f"{path.relative_to(ROOT)}:{use}"
        for folder in ("src", "tests", "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for use in deprecated_uses(path.read_text(encoding="utf-8"), deprecated_imports())
    ]

    assert uses == []


# --- negative controls: the checkers catch what they are for -------------------------------------

_CHANGELOG = """# Changelog

## Unreleased

### Added
- `judge` for everyone.

### Deprecated
- `wfbench.domain.step` (now `wfbench.domain.sweep.scheduling`) until 0.3.0.

## 0.1.0

### Removed
- `Cell` and the module `wfbench.domain.scheduling`.

### Fixed
- `fold` no longer raises.
"""


def test_only_names_under_deprecated_or_removed_count_as_recorded() -> None:
    """Negative control: ``judge`` (Added) and ``fold`` (Fixed) are not recorded; ``step``, ``Cell`` are."""
    names = recorded_names(_CHANGELOG)

    assert {"wfbench.domain.step", "Cell", "wfbench.domain.scheduling"} <= names
    assert not {"judge", "fold"} & names
    assert recorded_names(_CHANGELOG, {"Deprecated"}) == {
        "wfbench.domain.step",
        "wfbench.domain.sweep.scheduling",
    }


def test_a_name_dropped_from_all_without_an_entry_is_reported_and_with_one_is_not() -> None:
    """Negative control: dropping ``judge`` (only under Added) fails; dropping ``step``, ``Cell`` does not."""
    pinned = {"judge", "step", "Cell", "Row"}

    assert unrecorded_removals({"Row"}, pinned, _CHANGELOG) == ["judge"]
    assert unrecorded_removals({"Row", "judge"}, pinned, _CHANGELOG) == []


def test_a_module_counts_as_recorded_only_by_its_full_path() -> None:
    """Negative control: a bare ``workspace_rules`` could be any module; only the full path counts."""
    assert not is_recorded("wfbench.domain.workspace_rules", frozenset({"workspace_rules"}))
    assert is_recorded("wfbench.domain.scheduling", frozenset({"wfbench.domain.scheduling"}))


def test_every_way_of_reaching_a_deprecated_path_is_found_and_the_new_homes_are_not() -> None:
    """Negative control: each import form and a dotted use is reported by line; the new homes pass."""
    source = "\n".join(
        [
            "from wfbench.domain import Row, step",
            "from wfbench.domain import scheduling",
            "import wfbench.domain.workspace_rules",
            "from wfbench.domain.scheduling import Breaker",
            "value = wfbench.domain.Breaker",
            "from wfbench.domain.sweep.scheduling import step, Breaker",
            "from wfbench.domain.workspace import rules",
            "value = wfbench.domain.Row",
        ]
    )

    assert deprecated_uses(source, deprecated_imports()) == [
        "1: wfbench.domain.step",
        "2: wfbench.domain.scheduling",
        "3: wfbench.domain.workspace_rules",
        "4: wfbench.domain.scheduling",
        "4: wfbench.domain.scheduling.Breaker",
        "5: wfbench.domain.Breaker",
    ]


def test_the_docs_table_reader_reads_each_row_and_ignores_other_sections() -> None:
    """Negative control: a table in a later section is not read as a deprecation."""
    markdown = (
        "# Doc\n\n## Deprecated names\n\n| Old | New | Removed in |\n| --- | --- | --- |\n"
        "| `wfbench.domain.step` | `wfbench.domain.sweep.scheduling` | 0.3.0 |\n"
        "| `wfbench.domain.scheduling` (module) | `wfbench.domain.sweep.scheduling` | 0.3.0 |\n\n"
        "## Later\n\n| `wfbench.domain.fold` | `x` | 9.9.9 |\n"
    )

    assert documented_deprecations(markdown) == {
        ("wfbench.domain.step", "wfbench.domain.sweep.scheduling", "0.3.0"),
        ("wfbench.domain.scheduling", "wfbench.domain.sweep.scheduling", "0.3.0"),
    }
    assert len(DEPRECATED_NAMES) + len(DEPRECATED_MODULES) == len(deprecated_imports())
