"""The documents link only to what exists: every relative link of README.md, CONTRIBUTING.md
and every page under docs/ (the published reports in docs/results/ too) names a file of the
repository, and a ``#fragment`` a heading of that page. The docs index lists every page."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ["README.md", "CONTRIBUTING.md",
             *sorted(str(page.relative_to(ROOT)) for page in (ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def relative_links(page: Path) -> list[str]:
    """The links of ``page`` outside code blocks that name no scheme (``https:``, ``mailto:``)."""
    return [t for t in LINK.findall(FENCE.sub("", page.read_text())) if not re.match(r"[a-z]+:", t)]


def test_the_link_pattern_finds_the_entry_documents_links():
    assert all(relative_links(ROOT / document) for document in DOCUMENTS[:3])


def test_slug_follows_github():
    assert slug("What the scores mean and how good they are") == "what-the-scores-mean-and-how-good-they-are"
    assert slug("Output contract (`--json`, `to_dict()`)") == "output-contract---json-to_dict"


@pytest.mark.parametrize("document", DOCUMENTS)
def test_relative_links_resolve(document):
    page = ROOT / document
    links = relative_links(page)
    broken = []
    for link in links:
        path, _, fragment = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif fragment and target.suffix == ".md" and fragment not in anchors(target):
            broken.append(f"{link}: no heading with that anchor")
    assert not broken, f"{document}: " + "; ".join(broken)


def test_docs_index_lists_every_page():
    index = ROOT / "docs" / "README.md"
    listed = {(index.parent / link.partition("#")[0]).resolve() for link in relative_links(index)}
    pages = {page.resolve() for page in (ROOT / "docs").glob("*.md") if page.name != "README.md"}
    assert not pages - listed, f"docs/README.md does not list: {sorted(p.name for p in pages - listed)}"
    assert (ROOT / "docs" / "results").resolve() in listed, "docs/README.md does not list docs/results/"
