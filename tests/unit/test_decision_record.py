"""docs/decisions.md stays a record others can cite: numbered in order, and every citation lands.

Code, tests, benchmarks, the README and the other documents cite sections as "docs/decisions.md §N"
or "decisions §N"; a renumbering that forgets one, or a section removed, fails here. Sections headed
"## NEW: ..." are waiting for the lead to number them and are allowed at the end.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DECISIONS = ROOT / "docs" / "decisions.md"
CITING = ("functions", "infra", "tests", "bench", "docs")
CITING_FILES = ("README.md", "app.py", "pyproject.toml", "Makefile")
# "decisions.md §3", "decisions.md §3, §34", "decisions §18, §21", "decisions.md) §16 and §17"
CITATION = re.compile(r"decisions(?:\.md\)?)?,?((?:\s*(?:,|and)?\s*§\d+)+)")


def _sections(text: str) -> list[int]:
    return [int(number) for number in re.findall(r"^## (\d+)\. ", text, flags=re.MULTILINE)]


def _citations() -> list[tuple[str, int]]:
    files = [path for folder in CITING for path in (ROOT / folder).rglob("*") if path.is_file()]
    files += [ROOT / name for name in CITING_FILES if (ROOT / name).exists()]
    found = []
    for path in files:
        if path in (DECISIONS, Path(__file__).resolve()) or "__pycache__" in path.parts:
            continue
        if path.suffix not in {".py", ".md", ".toml", ""}:
            continue
        for match in CITATION.finditer(path.read_text(encoding="utf-8", errors="replace")):
            found += [(str(path.relative_to(ROOT)), int(n)) for n in re.findall(r"§(\d+)", match.group(1))]
    return found


def test_sections_are_numbered_in_order_with_new_ones_at_the_end() -> None:
    text = DECISIONS.read_text()
    numbers = _sections(text)
    assert numbers == list(range(1, len(numbers) + 1))
    headings = re.findall(r"^## (.*)$", text, flags=re.MULTILINE)
    numbered = [heading for heading in headings if not heading.startswith("NEW:")]
    assert headings[: len(numbered)] == numbered, "a '## NEW:' section sits before a numbered one"


def test_every_citation_of_a_section_names_one_that_exists() -> None:
    existing = set(_sections(DECISIONS.read_text()))
    citations = _citations()
    assert len(citations) > 30  # the pattern still finds the citations (README alone has a dozen)
    assert [(path, number) for path, number in citations if number not in existing] == []


def test_the_citation_pattern_reads_every_form_in_use() -> None:
    sample = "docs/decisions.md §3, §34; decisions §18, §21; [docs/decisions.md](docs/decisions.md) §16 and §17"
    numbers = [int(n) for match in CITATION.finditer(sample) for n in re.findall(r"§(\d+)", match.group(1))]
    assert numbers == [3, 34, 18, 21, 16, 17]
