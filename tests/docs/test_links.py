"""Links between the project's pages hold: every relative link in README.md, docs/ and
experiments/ markdown names a file that exists, and every ``#anchor`` a heading of it
(GitHub's slugs). Moving a section to a lab page must move the links that point at it."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "experiments").rglob("*.md")]
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"`|\*\*|\*", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    """Every anchor of a markdown page (repeated headings get -1, -2 ... as on GitHub)."""
    found, seen = set(), {}
    for line in FENCE.sub("", path.read_text()).splitlines():
        if line.startswith("#"):
            base = slug(line.lstrip("#"))
            count = seen.get(base, 0)
            found.add(base if count == 0 else f"{base}-{count}")
            seen[base] = count + 1
    found.update(re.findall(r'<a (?:name|id)="([^"]+)"', path.read_text()))
    return found


def links(page):
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if re.match(r"^[a-z]+:", target) or target.startswith("mailto"):
            continue  # http(s):, file: ... are not the project's pages
        yield target


def test_the_slug_follows_github():
    assert slug("The IMDB ratings task (8 classes)") == "the-imdb-ratings-task-8-classes"
    assert slug("`hatt serve`: a page") == "hatt-serve-a-page"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    broken = []
    for target in links(page):
        name, _, anchor = target.partition("#")
        path = (page.parent / name).resolve() if name else page
        if not path.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target} (no such heading)")
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"
