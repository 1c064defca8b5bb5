"""The README is read in ten minutes and everything else is one link away, and no link is broken.

The README begins with the two commands that work on a fresh machine, stays short, and ends with its
links to docs/; every page of docs/ is reachable from it, and every relative link (a file, or a heading
of one) of the README and of docs/ points at something that exists, as GitHub renders it.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 200
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def _prose(path: Path) -> str:
    """A page without its fenced blocks: a sample's brackets are not links."""
    return FENCE.sub("", path.read_text())


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for heading in re.findall(r"^#+ (.+)$", _prose(path), flags=re.MULTILINE):
        slug = _slug(heading)
        # GitHub numbers a repeated heading's anchor: "name", "name-1", ...
        anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


def _relative_links(path: Path) -> list[tuple[Path, str]]:
    """Each relative link of ``path``: the file it names (``path`` itself for "#anchor") and its anchor."""
    links = []
    for target in LINK.findall(_prose(path)):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file, _, anchor = target.partition("#")
        links.append(((path.parent / file).resolve() if file else path, anchor))
    return links


def test_the_slug_is_githubs() -> None:
    assert _slug("Throttles by cause (DynamoDB's own signals)") == "throttles-by-cause-dynamodbs-own-signals"
    assert _slug("Checking that it is watching: `hotkeys doctor`") == "checking-that-it-is-watching-hotkeys-doctor"
    assert _slug("`hotkeys replay EVENT_FILE...`") == "hotkeys-replay-event_file"


def test_every_relative_link_names_a_file_and_heading_that_exist() -> None:
    broken = []
    for page in PAGES:
        for file, anchor in _relative_links(page):
            if not file.exists():
                broken.append((page.name, str(file.relative_to(ROOT)) if ROOT in file.parents else str(file)))
            elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
                broken.append((page.name, f"{file.name}#{anchor}"))
    assert broken == []


def test_the_readme_begins_with_the_two_commands_and_ends_with_its_reference_links() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README has {len(lines)} lines: move reference material to docs/"
    # the title, then the commands a fresh clone runs
    assert lines[0].startswith("# ") and lines[2] == "```sh"
    assert lines[3].startswith("make demo ") and lines[4].startswith("make test ")
    # its last section is the links to docs/, one page per item
    sections = [index for index, line in enumerate(lines) if line.startswith("## ")]
    assert lines[sections[-1]] == "## Reference"
    items = [line for line in lines[sections[-1] + 1 :] if line.startswith("* ")]
    linked = {target for item in items for target in LINK.findall(item)}
    for page in ("cli.md", "alerts.md", "deploy.md", "cost.md", "limits.md"):
        assert f"docs/{page}" in linked, page


def test_every_docs_page_is_reachable_from_the_readme_and_opens_with_its_title() -> None:
    reached, todo = {README}, [README]
    while todo:
        for file, _anchor in _relative_links(todo.pop()):
            if file.suffix == ".md" and file.exists() and file not in reached:
                reached.add(file)
                todo.append(file)
    assert [page.name for page in PAGES if page not in reached] == []
    assert [page.name for page in PAGES if not page.read_text().startswith("# ")] == []
