"""docs/decisions.md stays a record others can cite, and a record a newcomer reads in an hour.

Code, tests, benchmarks, the README and the other documents cite sections as "docs/decisions.md §N"
or "decisions §N"; a renumbering that forgets one, or a section removed, fails here. Sections headed
"## NEW: ..." are waiting for the lead to number them and are allowed at the end.

It opens with a topic index that lists every numbered section under at least one topic, so a reader finds
the decisions on one subject without reading them all; a numbered section missing from it fails here.

Each numbered entry says what was decided and why, in at most 15 lines: its decision, context,
alternatives and consequences, or, when a later entry replaced it, one line naming that entry. Its
history lives in git, its figures in docs/measurements.md (each with the command that produced it).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DECISIONS = ROOT / "docs" / "decisions.md"
CITING = ("functions", "infra", "tests", "bench", "docs")
CITING_FILES = ("README.md", "app.py", "pyproject.toml", "Makefile")
TOPIC_INDEX = "## Topic index"
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


def _topic_index(text: str) -> str:
    """The topic index: from its heading to the first numbered section."""
    start = text.index(TOPIC_INDEX)
    first = re.search(r"^## \d+\. ", text, flags=re.MULTILINE)
    assert first and start < first.start(), "the topic index comes before the numbered sections"
    return text[start : first.start()]


def test_the_topic_index_lists_every_section_and_only_sections_that_exist() -> None:
    text = DECISIONS.read_text()
    indexed = {int(number) for number in re.findall(r"§(\d+)", _topic_index(text))}
    sections = set(_sections(text))
    assert sorted(sections - indexed) == [], "numbered sections missing from the topic index"
    assert sorted(indexed - sections) == [], "the topic index names sections that do not exist"


def test_every_citation_of_a_section_names_one_that_exists() -> None:
    existing = set(_sections(DECISIONS.read_text()))
    citations = _citations()
    assert len(citations) > 30  # the pattern still finds the citations (docs/alerts.md alone has about a dozen)
    assert [(path, number) for path, number in citations if number not in existing] == []


def test_the_citation_pattern_reads_every_form_in_use() -> None:
    sample = "docs/decisions.md §3, §34; decisions §18, §21; [docs/decisions.md](docs/decisions.md) §16 and §17"
    numbers = [int(n) for match in CITATION.finditer(sample) for n in re.findall(r"§(\d+)", match.group(1))]
    assert numbers == [3, 34, 18, 21, 16, 17]


# An entry's body: the lines between its heading and the next one (blank lines included).
MAX_BODY_LINES = 15
PARTS = ("**Decision.**", "**Context.**", "**Alternatives.**", "**Consequences.**")
# A replaced entry's whole body: "Superseded by §M: what it had decided."
STUB = re.compile(r"Superseded by §\d+: \S")
# Patches on an entry instead of a rewrite of it.
PATCH = re.compile(r"\bamended\b|\bamends\b|\bsuperseded\b|\bupdate:", re.IGNORECASE)
# Work a reader cannot see: a checkout, a branch, a scratch file, a stash, uncommitted changes.
UNSEEN = re.compile(r"uncommitted|checkout|\bbranch|\bstash|/tmp\b", re.IGNORECASE)
# How a fix was found is git's story, not the record's.
HISTORY = re.compile(
    r"\bwe found\b|previous version|first version|\bfound by\b|\bused to\b|\bwas fixed\b|#\d+ (?:showed|found)",
    re.IGNORECASE,
)
# A number with a unit of time, size, share, money, rate or ratio (a multiplication sign): a measured
# figure, which belongs in docs/measurements.md. "§12", "HTTP 500", "20 indexes" or "2,048 bytes" do not match.
TIMES = "\u00d7"
FIGURE = re.compile(rf"(?<![\w§.,])\d[\d,]*(?:\.\d+)?\s?(?:µs|us|ms|s|%|KB|MB|GB|{TIMES}|WCU/s)(?![\w/])|\$\s?\d")
# The figures a decision may quote: limits AWS documents, and the memory the stack deploys (§11, §38).
ALLOWED_FIGURES = {
    "1 MB",  # Lambda: a tumbling window's state per shard
    "400 KB",  # DynamoDB: an item
    "256 KB",  # SNS: a message
    "128 KB",  # S3: the smallest object a lifecycle rule transitions by default
    "20 KB",  # Lambda: a function's resource-based policy
    "1,769 MB",  # Lambda: the memory that buys one vCPU
    "1,000 WCU/s",  # DynamoDB: a partition's writes
    "512 MB",  # the consumer's memory (a setting, not a measurement)
}


def _entries(text: str) -> dict[int, list[str]]:
    """Each numbered entry's body lines; the file's end closes the last one (its trailing blank lines
    left out)."""
    entries: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            number = re.match(r"## (\d+)\. ", line)
            current = entries.setdefault(int(number.group(1)), []) if number else None
        elif current is not None:
            current.append(line)
    if entries:
        last = entries[max(entries)]
        while last and not last[-1].strip():
            last.pop()
    return entries


def _is_stub(body: list[str]) -> bool:
    return bool(STUB.match("\n".join(body).strip()))


def test_every_entry_is_at_most_fifteen_lines() -> None:
    entries = _entries(DECISIONS.read_text())
    assert len(entries) > 60
    assert {number: len(body) for number, body in entries.items() if len(body) > MAX_BODY_LINES} == {}


def test_every_entry_in_force_has_its_four_parts_in_order_and_a_replaced_one_a_single_line() -> None:
    malformed = {}
    for number, body in _entries(DECISIONS.read_text()).items():
        text = "\n".join(body).strip()
        if _is_stub(body):
            if len(text.splitlines()) > 3:
                malformed[number] = "a superseded entry is its one sentence"
            continue
        starts = [line.split(" ", 1)[0] for line in body if line.startswith("**")]
        found = [start for start in starts if start in PARTS]
        if found != list(PARTS):
            malformed[number] = found
    assert malformed == {}


def test_no_entry_is_patched_instead_of_rewritten() -> None:
    patched = {}
    for number, body in _entries(DECISIONS.read_text()).items():
        text = "\n".join(body).strip()
        if _is_stub(body):
            text = STUB.sub("", text, count=1)
        found = PATCH.findall(text)
        if found:
            patched[number] = found
    assert patched == {}


def test_no_measured_figures_they_are_in_the_measurement_log() -> None:
    figures = {}
    for number, body in _entries(DECISIONS.read_text()).items():
        found = [match.group(0) for match in FIGURE.finditer("\n".join(body))]
        found = [figure for figure in found if figure not in ALLOWED_FIGURES]
        if found:
            figures[number] = found
    assert figures == {}


def test_the_figure_pattern_tells_figures_from_limits_and_section_numbers() -> None:
    text = f"§12, HTTP 500, 20 indexes, 2,048 bytes, 1 MB per shard, p99 6 s, 4.35 GB, 1.34{TIMES}, $9, 57%, 27 µs"
    found = [match.group(0) for match in FIGURE.finditer(text) if match.group(0) not in ALLOWED_FIGURES]
    assert found == ["6 s", "4.35 GB", f"1.34{TIMES}", "$9", "57%", "27 µs"]


def test_no_unseen_work_or_bug_history_is_cited() -> None:
    text = DECISIONS.read_text()
    assert UNSEEN.findall(text) == []
    assert HISTORY.findall(text) == []
