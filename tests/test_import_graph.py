"""Imports run downward, and only tasks/ knows a task.

Layers, top to bottom: entry points (train, evaluate, bench) → actors → cluster, learner → tasks →
rewards, observe, models → algo, contracts → configs. Inside actors/, by side: the driver's loop
(actors.driver) → the rollout worker's side (actors.worker) and the reward side (actors.reward) → what
every side shares (actors: errors, the Generation type). A module may import its own package or a
package of a lower layer, never one beside or above it. Every import counts, also one inside a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = {
    "train": 0, "evaluate": 0, "bench": 0,
    "actors.driver": 1.0, "actors.worker": 1.2, "actors.reward": 1.2, "actors": 1.4,
    "cluster": 2, "learner": 2,
    "tasks": 3,
    "rewards": 4, "observe": 4, "models": 4,
    "algo": 5, "contracts": 5,
    "configs": 6,
}


def _modules() -> list[Path]:
    files = [ROOT / "train.py", ROOT / "evaluate.py"]
    for pkg in sorted({k.split(".")[0] for k in LAYERS}):
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
    if len(rel.parts) == 1:
        return rel.stem
    return _layer_of(".".join(rel.with_suffix("").parts))


def _layer_of(module: str) -> str:
    """The LAYERS key of a module: its sub-package of actors/ (actors.driver…), else its top package."""
    parts = module.split(".")
    return ".".join(parts[:2]) if ".".join(parts[:2]) in LAYERS else parts[0]


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_run_downward(path):
    here = _package(path)
    bad = []
    for line, module in _imports(path):
        top = _layer_of(module)
        if top in LAYERS and top != here and LAYERS[top] <= LAYERS[here]:
            bad.append(f"line {line}: {module} (layer {LAYERS[top]}) from {here} (layer {LAYERS[here]})")
    assert not bad, "imports that run up or sideways:\n" + "\n".join(bad)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_only_tasks_import_a_task(path):
    if _package(path) == "tasks":
        return
    # tasks.base and tasks.env are the interfaces (Task, Environment), tasks.scripted_client a harness's
    # stand-in client for the warm-up: none of them is a task.
    interfaces = ("tasks.base", "tasks.env", "tasks.scripted_client")
    named = [m for _, m in _imports(path) if m.startswith("tasks.") and m not in interfaces]
    assert not named, f"{path.relative_to(ROOT)} imports {named}: go through tasks.base (load_task)"
