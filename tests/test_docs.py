"""The repository stands alone: its links resolve, and it sends nobody to documents users do not have."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"docs/([\w.-]+\.md)(?:#([\w-]+))?")
OUTSIDE = re.compile(r"\.\./shared|PLATFORM\.md|SPEC\.md|SPEC §|DESIGN\.md|shared/seeds|seed 00\d")


def _tracked() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / f for f in out if (ROOT / f).is_file()
            and f.endswith((".py", ".md", ".yaml", "Makefile", ".toml"))]


def _anchors(md: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    heads = re.findall(r"^#+\s+(.+?)\s*$", md.read_text(encoding="utf-8"), flags=re.M)
    return {re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", h.lower())) for h in heads}


@pytest.mark.parametrize("path", _tracked(), ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_links_resolve(path):
    if path.name == "test_docs.py":
        return
    text = path.read_text(encoding="utf-8")
    for name, anchor in LINK.findall(text):
        target = ROOT / "docs" / name
        assert target.exists(), f"{path.relative_to(ROOT)} links docs/{name}, which does not exist"
        if anchor:
            assert anchor in _anchors(target), (
                f"{path.relative_to(ROOT)} links docs/{name}#{anchor}: no such heading")
    assert not OUTSIDE.search(text), f"{path.relative_to(ROOT)} refers to a document outside the repository"


def test_the_metrics_page_is_the_schema():
    from observe.schema import markdown

    assert markdown() in (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8"), (
        "docs/metrics.md is stale: regenerate its table with python -m observe.schema")


def test_the_readme_lists_the_schema_by_role():
    from observe.schema import by_role

    assert by_role() in (ROOT / "README.md").read_text(encoding="utf-8"), (
        "README.md's metric list is stale: paste python -m observe.schema --by-role")
