"""docs/domain.md is executed: its ``python`` blocks run in order in one namespace, and each
``text`` block right after a ``python`` block is that block's exact output.

The page is read from disk (hence integration, not unit); the code it runs is the pure domain.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import attrs
import pytest

import wfbench.domain

DOC = Path(__file__).resolve().parents[2] / "docs" / "domain.md"
_FENCE = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


@attrs.frozen
class Block:
    """One fenced code block: its language, its text and the line its fence opens on."""

    language: str
    code: str
    line: int
    #: The exact output the doc shows for this block (a ``text`` block right after it).
    expected: str | None = None


def extract_blocks(markdown: str) -> list[Block]:
    """The ``python`` blocks of ``markdown``, in order, each with the ``text`` block that follows it."""
    fences = list(_FENCE.finditer(markdown))
    blocks: list[Block] = []
    for index, fence in enumerate(fences):
        if fence.group(1) != "python":
            continue
        following = fences[index + 1] if index + 1 < len(fences) else None
        expected = None
        if (
            following is not None
            and following.group(1) == "text"
            and not markdown[fence.end() : following.start()].strip()
        ):
            expected = following.group(2)
        line = markdown.count("\n", 0, fence.start()) + 1
        blocks.append(Block("python", fence.group(2), line, expected))
    return blocks


def run_blocks(blocks: list[Block], source: str) -> dict[str, object]:
    """Exec every block in one namespace; raise AssertionError naming the block on any drift."""
    namespace: dict[str, object] = {"__name__": "docs_domain"}
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                exec(compile(block.code, f"{source}:{block.line}", "exec"), namespace)  # noqa: S102 - the doc's own code
            except AssertionError as exc:
                raise AssertionError(f"{source}:{block.line}: an assert in the block failed: {exc}") from exc
        if block.expected is not None and out.getvalue() != block.expected:
            raise AssertionError(
                f"{source}:{block.line}: output differs from the doc\n"
                f"--- documented\n{block.expected}--- actual\n{out.getvalue()}"
            )
    return namespace


def test_every_python_block_of_docs_domain_md_runs_in_order_and_prints_what_the_doc_shows() -> None:
    """The whole page runs top to bottom in one namespace; every shown output is the real one."""
    blocks = extract_blocks(DOC.read_text(encoding="utf-8"))

    namespace = run_blocks(blocks, "docs/domain.md")

    assert namespace["decision"].kind is wfbench.domain.DecisionKind.PROMOTE  # type: ignore[attr-defined]


def test_the_doc_shows_an_output_for_most_blocks_and_asserts_the_gate_decisions() -> None:
    """The page is not vacuous: many blocks, most with a checked output, and the decisions asserted."""
    markdown = DOC.read_text(encoding="utf-8")
    blocks = extract_blocks(markdown)

    assert len(blocks) >= 15
    assert sum(block.expected is not None for block in blocks) >= len(blocks) - 2
    code = "".join(block.code for block in blocks)
    for kind in ("PROMOTE", "KEEP_INCUMBENT", "INSUFFICIENT_EVIDENCE"):
        assert f"DecisionKind.{kind}" in code


def test_every_public_name_of_the_domain_appears_on_the_page() -> None:
    """Each name in ``wfbench.domain.__all__`` is mentioned in backticks in docs/domain.md."""
    markdown = DOC.read_text(encoding="utf-8")

    missing = [name for name in wfbench.domain.__all__ if f"`{name}`" not in markdown]

    assert missing == []


# --- negative controls: the checker itself catches drift ---------------------------------------

_DRIFTED = """
```python
x = 2
print(x * 21)
```

```text
41
```
"""


def test_the_checker_refuses_a_block_whose_output_drifted_from_the_doc() -> None:
    """Negative control: a documented 41 against a printed 42 fails, naming the block's line."""
    with pytest.raises(AssertionError, match=r"doc\.md:2: output differs"):
        run_blocks(extract_blocks(_DRIFTED), "doc.md")


def test_the_checker_reports_a_failing_assert_written_in_the_doc() -> None:
    """Negative control: an assert inside a block fails the run with the block's location."""
    markdown = "text\n\n```python\nvalue = 1\n```\n\n```python\nassert value == 2, 'drifted'\n```\n"

    with pytest.raises(AssertionError, match=r"doc\.md:7: an assert in the block failed: drifted"):
        run_blocks(extract_blocks(markdown), "doc.md")


def test_blocks_share_one_namespace_and_only_an_adjacent_text_block_is_an_output() -> None:
    """Later blocks see earlier names; a text block after prose is an illustration, not an output."""
    markdown = (
        "```python\nname = 'a'\n```\n\n```text\n```\n\nprose\n\n```python\nprint(name)\n```\n"
        "\nprose\n\n```text\nnot checked\n```\n"
    )
    blocks = extract_blocks(markdown)

    assert [block.expected for block in blocks] == ["", None]
    assert run_blocks(blocks, "doc.md")["name"] == "a"


def test_an_empty_output_block_means_the_block_prints_nothing() -> None:
    """Negative control: a block documented as silent that prints something fails."""
    blocks = extract_blocks("```python\nprint('noise')\n```\n```text\n```\n")

    with pytest.raises(AssertionError, match="output differs"):
        run_blocks(blocks, "doc.md")


def test_every_public_name_is_in_the_domain_guide_table() -> None:
    """docs/domain.md's table of public names lists exactly ``__all__``."""
    guide = DOC.read_text(encoding="utf-8")
    table = guide.split("## The public names", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", table.split("\n\n", 2)[2]))

    assert listed == set(wfbench.domain.__all__)
