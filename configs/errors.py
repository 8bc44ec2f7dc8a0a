"""Config errors a user can act on: `ConfigError`, and a pydantic validation error explained one line per
problem (the key, what is allowed for it, what was given), never repeating a `cluster.env_vars` value.
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from configs.root import Config


class ConfigError(ValueError):
    """A config that cannot be used; the message says why and where."""


SECRET_SECTION = ("cluster", "env_vars")
REDACTED = "<redacted>"


def is_secret(parts: list[str] | tuple) -> bool:
    """True for a key whose value is, or holds, `cluster.env_vars` values."""
    n = min(len(parts), len(SECRET_SECTION))
    return tuple(str(p) for p in parts[:n]) == SECRET_SECTION[:n]


def _submodel(ann: Any) -> type[BaseModel] | None:
    """The model class in an annotation: `Model`, `list[Model]`, `Model | None`, ..."""
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for arg in typing.get_args(ann):
        found = _submodel(arg)
        if found is not None:
            return found
    return None


def _variants(ann: Any) -> dict[str, type[BaseModel]]:
    """The models of a section with one variant per kind (`train.pipeline`, `env`), by kind."""
    out = {}
    for arg in typing.get_args(ann):
        if isinstance(arg, type) and issubclass(arg, BaseModel) and "kind" in arg.model_fields:
            out[arg.model_fields["kind"].default] = arg
        else:
            out.update(_variants(arg))
    return out


def _allowed_keys(model: type[BaseModel], loc: tuple) -> list[str]:
    """Field names of the (sub)model at `loc`, to list alongside an unknown-key error."""
    parts = list(loc[:-1])
    while parts:
        part = parts.pop(0)
        if isinstance(part, int):  # an index into a list: stay on the list's item model
            continue
        field = model.model_fields.get(str(part))
        kinds = _variants(field.annotation) if field else {}
        if kinds and parts and parts[0] in kinds:  # the kind the section was read as
            model = kinds[parts.pop(0)]
            continue
        sub = _submodel(field.annotation) if field else None
        if sub is None:
            return []
        model = sub
    return sorted(model.model_fields)


def _shown_loc(model: type[BaseModel], loc: tuple) -> tuple[list, str]:
    """`loc` without the kind a section with variants was read as, and that kind ('' if none)."""
    out, kind = [], ""
    for i, part in enumerate(loc):
        field = model.model_fields.get(str(part)) if isinstance(part, str) else None
        out.append(part)
        if field is not None and i + 1 < len(loc) and loc[i + 1] in _variants(field.annotation):
            kind = str(loc[i + 1])
            return out + list(loc[i + 2:]), kind
        sub = _submodel(field.annotation) if field else None
        if sub is not None:
            model = sub
    return out, kind


def explain(err: ValidationError, origin: str, prefix: str = "", model: type[BaseModel] | None = None) -> str:
    """One line per error of `err`, each naming its key (under `prefix`) and what is allowed."""
    model = model or Config
    lines = [f"invalid config ({origin}):"]
    for e in err.errors():
        loc = tuple(e["loc"])
        shown, kind = _shown_loc(model, loc)
        key = ".".join(str(x) for x in (prefix.split(".") if prefix else []) + shown) or "(root)"
        if e["type"] == "extra_forbidden":
            allowed = ", ".join(_allowed_keys(model, loc))
            here = f"kind {kind}" if kind else "here"
            lines.append(f"  {key}: unknown key (allowed for {here}: {allowed})")
        else:
            msg = e["msg"]
            if e["type"] == "value_error":  # raised by a validator: its own message says it all
                msg = msg.removeprefix("Value error, ")
            got = e.get("input")
            got_s = "" if isinstance(got, dict) or is_secret(loc) else f" (got {got!r})"
            lines.append(f"  {msg}" if not loc else f"  {key}: {msg}{got_s}")
    return "\n".join(lines)
