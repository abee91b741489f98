"""The README and the documentation site: short front page, links that resolve."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
LINK = re.compile(r"(?<!!)\[[^\]]+\]\(([^)\s]+)\)")


def _relative_links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def _slugs(path: Path) -> set[str]:
    """The anchors of a markdown file's headings, as GitHub and mkdocs make them."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    heads = re.findall(r"^#+ (.+)$", text, flags=re.M)
    return {re.sub(r"\s+", "-", re.sub(r"[^\w\s-]", "", h.strip().lower())) for h in heads}


def test_the_readme_fits_on_a_few_screens() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 300


@pytest.mark.parametrize(
    "source",
    [pytest.param(README, id="README"), pytest.param(ROOT / "CONTRIBUTING.md", id="CONTRIBUTING")],
)
def test_every_link_of_the_front_pages_resolves(source: Path) -> None:
    broken = []
    for target in _relative_links(source):
        file, _, anchor = target.partition("#")
        path = (source.parent / file) if file else source
        missing_anchor = bool(anchor) and path.suffix == ".md" and anchor not in _slugs(path)
        if not path.exists() or missing_anchor:
            broken.append(target)
    assert not broken, f"{source.name}: broken links {broken}"


def test_every_documentation_page_is_in_the_site() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert pages and all(f": {page}" in nav for page in pages), pages
