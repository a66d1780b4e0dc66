"""The documentation site builds strictly and every internal link and image of the built pages resolves."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


class _Refs(HTMLParser):
    """Collects (tag, attribute value) of every href and src in a page."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.refs.append((tag, value))


def _target(page: Path, ref: str, site: Path) -> Path | None:
    """The file a relative reference of ``page`` points to, or None for external links and page anchors."""
    parts = urlsplit(ref)
    if parts.scheme or parts.netloc or ref.startswith(("#", "mailto:", "data:")):
        return None
    path = unquote(parts.path)
    target = (site / path.lstrip("/")) if path.startswith("/") else (page.parent / path)
    return target / "index.html" if path.endswith("/") or target.is_dir() else target


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=240, env=env,
    )  # fmt: skip
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    return out


def test_every_internal_link_and_image_of_the_site_resolves(site: Path):
    broken = []
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        parser = _Refs()
        parser.feed(page.read_text(encoding="utf-8"))
        for tag, ref in parser.refs:
            target = _target(page, ref, site)
            if target is not None and not target.exists():
                broken.append(f"{page.relative_to(site)}: <{tag}> {ref}")
    assert not broken, "dead links or missing images:\n" + "\n".join(broken)


def test_every_markdown_page_is_in_the_navigation():
    nav = (REPO_ROOT / "mkdocs.yml").read_text()
    listed = set(re.findall(r":\s*([\w/.-]+\.md)\s*$", nav, re.M))
    pages = {p.name for p in (REPO_ROOT / "docs").glob("*.md")}
    assert pages - listed == set(), "pages missing from mkdocs.yml's nav"
