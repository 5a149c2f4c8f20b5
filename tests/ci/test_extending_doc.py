"""docs/extending.md shows the batch prediction kind's real code: every Python block on the page stands,
line for line (indentation aside), in the file the page names for it."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "extending.md"
SOURCES = (
    "infra/vertex/runners/vertex_batch.py",
    "infra/vertex/batch/kind.py",
    "infra/vertex/batch_provider.py",
)


def blocks() -> list[str]:
    return [textwrap.dedent(b) for b in re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)]


def test_every_code_block_is_the_code_of_a_named_file() -> None:
    found = blocks()
    assert len(found) == len(SOURCES)
    for block, source in zip(found, SOURCES, strict=True):
        assert source.removeprefix("infra/vertex/") in PAGE.read_text()
        assert block.strip() in (ROOT / source).read_text(), f"the block for {source} is not its code"


def test_the_page_names_every_hook_and_attribute_of_the_kind_contract() -> None:
    from infra.vertex.lifecycle.kind import Kind

    text = PAGE.read_text()
    named = set(re.findall(r"`(\w+)", text)) | set(re.findall(r", (\w+)`", text))
    assert [name for name in vars(Kind) if not name.startswith("_") and name not in named] == []


def test_the_counted_table_gives_each_files_wc_l() -> None:
    """Every row of "What the batch kind wrote" with a count per file gives that file's lines (a bare name
    is in the row's first file's folder, a `runners/...` one under infra/vertex/)."""
    table = PAGE.read_text().split("What the batch kind wrote", 1)[1].split("\n\n", 2)[1]
    checked = 0
    for row in table.splitlines():
        cells = row.split("|")
        paths, counts = re.findall(r"`([\w/.]+\.py)`", cells[1]), re.findall(r"\d+", cells[2])
        if not paths or len(paths) != len(counts) or "registry rows" in row:  # rows added, not files
            continue
        first = ROOT / paths[0]
        for path, count in zip(paths, counts, strict=True):
            found = next(
                p for p in (ROOT / path, first.parent / path, ROOT / "infra/vertex" / path) if p.is_file()
            )
            assert len(found.read_text().splitlines()) == int(count), f"{path}: not {count} lines"
            checked += 1
    assert checked >= 12
