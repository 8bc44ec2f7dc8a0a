"""Load a YAML preset, apply `--set section.key=value` overrides, validate, explain errors.

Errors are `ConfigError`s with a message a user can act on (the key, the file, what is allowed);
`train.py` prints them without a traceback.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from configs.root import Config

PRESETS_DIR = Path(__file__).resolve().parent


class ConfigError(ValueError):
    """A config that cannot be used; the message says why and where."""


_BOOL_TAG = "tag:yaml.org,2002:bool"
_FLOAT_TAG = "tag:yaml.org,2002:float"


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2-style booleans and floats, for files and `--set` values alike.

    - Booleans are only `true`/`false` (any case). PyYAML's YAML 1.1 rules also read `on`, `off`,
      `yes`, `no`, `y`, `n` as booleans, which breaks string choices such as `algorithm.ngrpo.mode: off`.
    - Floats also accept exponents without a dot or without a sign (`1e-4`, `1e3`, `5.0e6`), which
      PyYAML would otherwise read as strings.
    - Ints, null, lists and mappings resolve as in SafeLoader. Note that ints keep the YAML 1.1
      rules, so `run_name=001` is the int 1 (a leading 0 means octal); quote a value
      (`run_name='001'`) to force a string.
    """


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_BOOL_TAG, _FLOAT_TAG)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(_BOOL_TAG, re.compile(r"^(?:true|false)$", re.IGNORECASE), list("tTfF"))
# Added after the int resolver; no alternative matches a plain int (each needs a `.`, an exponent,
# `:`, or is inf/nan), so ints stay ints.
_Loader.add_implicit_resolver(
    _FLOAT_TAG,
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)[eE][-+]?[0-9]+
        |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
        |[-+]\.[0-9_]+(?:[eE][-+]?[0-9]+)?
        |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


def resolve_path(path: str | Path) -> Path:
    """A preset name (`tiny-cpu`), a file in configs/, or a path."""
    p = Path(path)
    # No fallback to `PRESETS_DIR / p.name`: a path that does not exist must be an error, not a
    # preset of the same file name. (An absolute `p` makes `PRESETS_DIR / p` just `p`.)
    for candidate in (p, PRESETS_DIR / p, PRESETS_DIR / f"{p}.yaml"):
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
        value = yaml.load(raw, Loader=_Loader) if raw.strip() else ""
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


def _submodel(ann: Any) -> type[BaseModel] | None:
    """The model class in an annotation: `Model`, `list[Model]`, `Model | None`, ..."""
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for arg in typing.get_args(ann):
        found = _submodel(arg)
        if found is not None:
            return found
    return None


def _allowed_keys(model: type[BaseModel], loc: tuple) -> list[str]:
    """Field names of the (sub)model at `loc`, to list alongside an unknown-key error."""
    for part in loc[:-1]:
        if isinstance(part, int):  # an index into a list: stay on the list's item model
            continue
        field = model.model_fields.get(str(part))
        sub = _submodel(field.annotation) if field else None
        if sub is None:
            return []
        model = sub
    return sorted(model.model_fields)


def explain(err: ValidationError, origin: str, prefix: str = "", model: type[BaseModel] | None = None) -> str:
    """One line per error of `err`, each naming its key (under `prefix`) and what is allowed."""
    model = model or Config
    lines = [f"invalid config ({origin}):"]
    for e in err.errors():
        loc = tuple(e["loc"])
        key = ".".join(str(x) for x in (prefix.split(".") if prefix else []) + list(loc)) or "(root)"
        if e["type"] == "extra_forbidden":
            allowed = ", ".join(_allowed_keys(model, loc))
            lines.append(f"  {key}: unknown key (allowed here: {allowed})")
        else:
            msg = e["msg"]
            if e["type"] == "value_error":  # raised by a validator: its own message says it all
                msg = msg.removeprefix("Value error, ")
            got = e.get("input")
            got_s = "" if isinstance(got, dict) else f" (got {got!r})"
            lines.append(f"  {msg}" if not loc else f"  {key}: {msg}{got_s}")
    return "\n".join(lines)


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> Config:
    """Load `path` (default: the tiny-cpu preset), apply overrides, validate.

    >>> cfg = load_config("tiny-cpu", ["train.steps=3"])
    >>> cfg.train.steps
    3
    """
    file = resolve_path(path or "tiny-cpu")
    try:
        # Loading from the open file lets PyYAML name it in error marks (not "<unicode string>").
        with file.open(encoding="utf-8") as f:
            data = yaml.load(f, Loader=_Loader) or {}
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
        raise ConfigError(explain(e, origin)) from None
