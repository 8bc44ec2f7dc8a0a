"""The code map of docs/architecture.md, made from the tree: every module with the first sentence of its
docstring. `python docs/code_map.py` prints it; tests/test_docs.py checks the document holds exactly this,
so a module added, moved or removed (or a docstring changed) shows there until the map is pasted again.

A package's first line is its `__init__.py` docstring. The modules of a top-level package are listed one by
one; a package inside one is a single line when its `__init__.py` says what it is (tasks/fund_assistant/),
otherwise its modules are listed. The sides of actors/ (EXPANDED) get both: their line, then their modules.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ("train.py", "evaluate.py")
# The layers of tests/test_import_graph.py, top to bottom, then the benchmarks and the examples.
PACKAGES = ("actors", "cluster", "learner", "tasks", "rewards", "observe", "models", "algo", "contracts",
            "configs", "bench", "examples")
WIDTH = 108
EXPANDED = ("actors/driver", "actors/driver/pipelines", "actors/worker", "actors/reward")
# The first sentence ends at a full stop before a space or the end, not at an abbreviation.
SENTENCE = re.compile(r"^(.*?(?<!e\.g)(?<!i\.e)(?<!\bvs)[.!?])(?=\s|$)", re.S)


def summary(path: Path) -> str:
    """The first sentence of the module's docstring, on one line ('' without a docstring)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    para = " ".join(doc.split("\n\n")[0].split())
    m = SENTENCE.match(para)
    return m.group(1) if m else para


def _entries(pkg: Path, indent: str, root: Path) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for path in sorted(p for p in pkg.iterdir() if p.name != "__pycache__"):
        if path.is_dir() and (path / "__init__.py").is_file():
            described = summary(path / "__init__.py")
            if described and path.relative_to(root).as_posix() in EXPANDED:
                out.append((f"{indent}{path.name}/", described))
                out += _entries(path, indent + "  ", root)
            elif described:
                out.append((f"{indent}{path.name}/", described))
            else:
                out += [(f"{indent}{path.name}/{name}", text)
                        for name, text in _entries(path, "", root)]
        elif path.suffix == ".py" and path.name != "__init__.py":
            out.append((f"{indent}{path.name}", summary(path)))
    return out


def code_map(root: Path = ROOT) -> str:
    """The map as it goes between the ``` lines of the document (ending in a newline)."""
    groups = [[(name, summary(root / name)) for name in SCRIPTS]]
    for name in PACKAGES:
        pkg = root / name
        groups.append([(f"{name}/", summary(pkg / "__init__.py")), *_entries(pkg, "  ", root)])
    col = max(len(left) for group in groups for left, _ in group) + 2
    lines: list[str] = []
    for group in groups:
        if lines:
            lines.append("")
        for left, text in group:
            wrapped = textwrap.wrap(text, WIDTH - col, break_on_hyphens=False) or [""]
            lines.append(f"{left:<{col}}{wrapped[0]}".rstrip())
            lines += [" " * col + rest for rest in wrapped[1:]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(code_map(), end="")
