"""Imports run downward, and only tasks/ knows a task.

Layers, top to bottom: entry points (train, evaluate, bench) → actors → cluster, learner → tasks →
rewards, observe, models → algo, contracts → configs. A module may import its own package or a package
of a lower layer, never one beside or above it. Every import counts, also one inside a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = {
    "train": 0, "evaluate": 0, "bench": 0,
    "actors": 1,
    "cluster": 2, "learner": 2,
    "tasks": 3,
    "rewards": 4, "observe": 4, "models": 4,
    "algo": 5, "contracts": 5,
    "configs": 6,
}


def _modules() -> list[Path]:
    files = [ROOT / "train.py", ROOT / "evaluate.py"]
    for pkg in LAYERS:
        if (ROOT / pkg).is_dir():
            files += sorted((ROOT / pkg).rglob("*.py"))
    return files


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every absolute import in the file."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
    return out


def _package(path: Path) -> str:
    rel = path.relative_to(ROOT)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_run_downward(path):
    here = _package(path)
    bad = []
    for line, module in _imports(path):
        top = module.split(".")[0]
        if top in LAYERS and top != here and LAYERS[top] <= LAYERS[here]:
            bad.append(f"line {line}: {module} (layer {LAYERS[top]}) from {here} (layer {LAYERS[here]})")
    assert not bad, "imports that run up or sideways:\n" + "\n".join(bad)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_only_tasks_import_a_task(path):
    if _package(path) == "tasks":
        return
    # tasks.base and tasks.env are the interfaces (Task, Environment), not a task.
    named = [m for _, m in _imports(path) if m.startswith("tasks.") and m not in ("tasks.base", "tasks.env")]
    assert not named, f"{path.relative_to(ROOT)} imports {named}: go through tasks.base (load_task)"
