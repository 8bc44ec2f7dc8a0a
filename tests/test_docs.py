"""The repository stands alone: its links resolve, and it sends nobody to documents users do not have."""

from __future__ import annotations

import re
import runpy
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


def test_the_code_map_is_the_tree():
    """docs/architecture.md's code map is docs/code_map.py's output: every module, nothing that is gone."""
    code_map = runpy.run_path(str(ROOT / "docs" / "code_map.py"))["code_map"]
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = re.search(r"^## Code map\n.*?^```\n(.*?)^```$", doc, flags=re.M | re.S)
    assert block, "docs/architecture.md has no code map block"
    assert block.group(1) == code_map(), (
        "docs/architecture.md's code map is stale: paste the output of python docs/code_map.py")


def test_the_code_map_names_every_module(tmp_path):
    """Made from a tree, the map lists each module of a top-level package, a described sub-package as one
    line, and the modules of one without a docstring."""
    made = runpy.run_path(str(ROOT / "docs" / "code_map.py"))
    for pkg in made["PACKAGES"]:
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    files = {"train.py": '"""The job."""', "evaluate.py": "", "actors/__init__.py": '"""Roles. More."""',
             "actors/new_role.py": '"""A new role, e.g. this one.\n\nDetails."""',
             "tasks/mine/__init__.py": '"""My task."""', "tasks/mine/rows.py": '"""Hidden."""',
             "examples/x/__init__.py": "", "examples/x/task.py": '"""An example."""'}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    out = made["code_map"](tmp_path)
    assert "  new_role.py" in out and "A new role, e.g. this one.\n" in out and "Details" not in out
    assert "Roles.\n" in out and "More" not in out
    assert "  mine/" in out and "My task." in out and "rows.py" not in out
    assert "  x/task.py" in out and "An example." in out
