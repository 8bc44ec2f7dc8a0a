"""Load a YAML preset, apply `--set section.key=value` overrides, validate, explain errors.

Errors are `ConfigError`s with a message a user can act on (the key, the file, what is allowed);
`train.py` prints them without a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from configs.root import Config

PRESETS_DIR = Path(__file__).resolve().parent


class ConfigError(ValueError):
    """A config that cannot be used; the message says why and where."""


def resolve_path(path: str | Path) -> Path:
    """A preset name (`tiny-cpu`), a file in configs/, or a path."""
    p = Path(path)
    for candidate in (p, PRESETS_DIR / p, PRESETS_DIR / f"{p}.yaml", PRESETS_DIR / p.name):
        if candidate.is_file():
            return candidate
    presets = ", ".join(sorted(x.stem for x in PRESETS_DIR.glob("*.yaml")))
    raise ConfigError(f"config file not found: {path} (presets in configs/: {presets})")


def parse_override(item: str) -> tuple[list[str], Any]:
    """`a.b.c=value` → (["a","b","c"], yaml-parsed value)."""
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected section.key=value")
    key, raw = item.split("=", 1)
    parts = [p for p in key.strip().split(".") if p]
    if not parts:
        raise ConfigError(f"--set {item!r}: empty key")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as e:
        raise ConfigError(f"--set {item!r}: value is not valid YAML ({e})") from None
    return parts, value


def _apply(data: dict, parts: list[str], value: Any, origin: str) -> None:
    node = data
    for i, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{origin}: {'.'.join(parts[: i + 1])} is a value, not a section")
        node = child
    node[parts[-1]] = value


def _allowed_keys(model: type[BaseModel], loc: tuple) -> list[str]:
    """Field names of the (sub)model at `loc`, to list alongside an unknown-key error."""
    for part in loc[:-1]:
        field = model.model_fields.get(str(part))
        ann = getattr(field, "annotation", None) if field else None
        if not (isinstance(ann, type) and issubclass(ann, BaseModel)):
            return []
        model = ann
    return sorted(model.model_fields)


def _explain(err: ValidationError, origin: str) -> str:
    lines = [f"invalid config ({origin}):"]
    for e in err.errors():
        loc = tuple(e["loc"])
        key = ".".join(str(x) for x in loc) or "(root)"
        if e["type"] == "extra_forbidden":
            allowed = ", ".join(_allowed_keys(Config, loc))
            lines.append(f"  {key}: unknown key (allowed here: {allowed})")
        else:
            got = e.get("input")
            got_s = "" if isinstance(got, dict) else f" (got {got!r})"
            lines.append(f"  {key}: {e['msg']}{got_s}")
    return "\n".join(lines)


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> Config:
    """Load `path` (default: the tiny-cpu preset), apply overrides, validate.

    >>> cfg = load_config("tiny-cpu", ["train.steps=3"])
    >>> cfg.train.steps
    3
    """
    file = resolve_path(path or "tiny-cpu")
    try:
        data = yaml.safe_load(file.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{file}: not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: the top level must be a mapping of sections")
    for item in overrides or []:
        parts, value = parse_override(item)
        _apply(data, parts, value, f"--set {item}")
    origin = str(file) + (f" with --set {' '.join(overrides)}" if overrides else "")
    try:
        return Config.model_validate(data)
    except ValidationError as e:
        raise ConfigError(_explain(e, origin)) from None
