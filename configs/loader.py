"""Load a YAML preset, apply `--set section.key=value` overrides, validate (errors: configs/errors.py).

Errors are `ConfigError`s with a message a user can act on (the key, the file, what is allowed);
`train.py` prints them without a traceback. The values under `cluster.env_vars` are secrets (tokens go
there): no error message repeats them, whichever way they came in (the file, `--set KEY=...`, or a
mapping given to `--set`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from configs.env import env_section
from configs.errors import REDACTED, SECRET_SECTION, ConfigError, explain, is_secret
from configs.root import Config

PRESETS_DIR = Path(__file__).resolve().parent
# Sections with one variant per `kind` (configs/pipeline.py, configs/env.py): a base and an overlay of
# different kinds do not merge key by key, the overlay replaces the section.
KIND_SECTIONS = ("pipeline", "env")


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


class Replace(dict):
    """A mapping written `!replace {...}` (or `key: !replace` over an indented block): over a base it
    replaces the base's mapping whole instead of merging into it (`merge`)."""


def _replace(loader: yaml.SafeLoader, node: yaml.Node) -> Replace:
    if not isinstance(node, yaml.MappingNode):
        raise yaml.constructor.ConstructorError(None, None, "!replace applies to a mapping (lists are "
                                                "always replaced)", node.start_mark)
    return Replace(loader.construct_mapping(node, deep=True))


_Loader.add_constructor("!replace", _replace)


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


def shown(item: str) -> str:
    """A `--set` item as it may be echoed: the value of a secret key replaced."""
    key, sep, _ = item.partition("=")
    return f"{key}={REDACTED}" if sep and is_secret([p for p in key.strip().split(".") if p]) else item


def _yaml_problem(e: yaml.YAMLError) -> str:
    """PyYAML's message without the snippet of the offending line (it may hold a token)."""
    mark = getattr(e, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{getattr(e, 'problem', None) or type(e).__name__}{where}"


def parse_override(item: str) -> tuple[list[str], Any]:
    """`a.b.c=value` → (["a","b","c"], yaml-parsed value).

    An environment variable (`cluster.env_vars.NAME=value`) keeps its text as typed: a token such as
    `0123` or `1e5` must not become a number (YAML would read 0123 as octal 83).
    """
    if "=" not in item:
        raise ConfigError(f"--set {shown(item)!r}: expected section.key=value")
    key, raw = item.split("=", 1)
    parts = [p for p in key.strip().split(".") if p]
    if not parts:
        raise ConfigError(f"--set {shown(item)!r}: empty key")
    quoted = len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\""
    if len(parts) == len(SECRET_SECTION) + 1 and is_secret(parts) and not quoted:
        return parts, raw
    try:
        value = yaml.load(raw, Loader=_Loader) if raw.strip() else ""
    except yaml.YAMLError as e:
        raise ConfigError(f"--set {shown(item)!r}: value is not valid YAML ({_yaml_problem(e)})") from None
    return parts, value


def _apply(data: dict, parts: list[str], value: Any, origin: str) -> None:
    node = data
    for i, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if part in KIND_SECTIONS:  # `pipeline: stream` is {kind: stream}
            child = node[part] = _kind_section(part, child)
        if not isinstance(child, dict):
            raise ConfigError(f"{origin}: {'.'.join(parts[: i + 1])} is a value, not a section")
        node = child
    last = parts[-1]
    if last in KIND_SECTIONS and isinstance(value, str):  # a kind by name: the section's settings stay
        current = _kind_section(last, node.get(last))  # when it is already of that kind
        node[last] = current if isinstance(current, dict) and current.get("kind") == value else value
    elif last == "kind" and len(parts) > 1 and parts[-2] in KIND_SECTIONS and node.get("kind") != value:
        node.clear()  # another kind: its section starts from that kind's defaults
        node["kind"] = value
    else:
        node[last] = value


def read_file(file: Path) -> dict:
    """One YAML file's top-level mapping (not yet merged with what it extends)."""
    try:
        # Loading from the open file lets PyYAML name it in error marks (not "<unicode string>").
        with file.open(encoding="utf-8") as f:
            data = yaml.load(f, Loader=_Loader) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{file}: not valid YAML: {_yaml_problem(e)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: the top level must be a mapping of sections")
    return data


def merge(base: dict, child: dict) -> dict:
    """`child` over `base`: nested mappings merge key by key, anything else (lists included) is replaced
    whole. A mapping tagged `!replace` replaces the base's whole, and so does a `task` section that names
    another task (the base's task options belong to the base's task).

    >>> merge({"a": {"x": 1, "y": [1, 2]}, "b": 1}, {"a": {"y": [3]}})
    {'a': {'x': 1, 'y': [3]}, 'b': 1}
    >>> merge({"a": {"x": 1, "y": 2}}, {"a": Replace({"y": 3})})
    {'a': {'y': 3}}
    """
    out = dict(base)
    for key, value in child.items():
        old = out.get(key)
        if key in KIND_SECTIONS:  # a bare kind is the section {kind: ...}
            old, value = _kind_section(key, old), _kind_section(key, value)
        if isinstance(value, Replace):
            out[key] = dict(value)
        elif isinstance(old, dict) and isinstance(value, dict) and not _renames_task(key, old, value):
            out[key] = merge(old, value)
        else:
            out[key] = value
    return out


def _kind_section(key: str, value: Any) -> Any:
    """A section whose variants are kinds (`train.pipeline`, `env`) in its `{kind: ...}` spelling, where
    it was written as a bare name (or, for env, with the older `enabled`)."""
    if isinstance(value, str):
        return {"kind": value}
    if key == "env" and isinstance(value, dict) and "enabled" in value:
        try:
            return env_section(value)
        except ValueError:
            return value  # validation names what is wrong
    return value


def _renames_task(key: str, old: dict, new: dict) -> bool:
    """A section naming another task (or another kind of pipeline or sample) replaces the base's whole."""
    if key in KIND_SECTIONS:
        return "kind" in new and "kind" in old and new["kind"] != old["kind"]
    return key == "task" and "name" in new and new["name"] != old.get("name", "fund_assistant")


def load_data(path: str | Path, _seen: tuple[Path, ...] = ()) -> tuple[dict, list[Path]]:
    """A preset's raw data with its `extends:` chain merged in (base first), and the chain's files.

    `extends:` names a preset (`tiny-cpu`) or a path, relative to the extending file's folder first."""
    file = resolve_path(path) if not _seen else path
    file = Path(file).resolve()
    if file in _seen:
        chain = " -> ".join(str(p) for p in (*_seen, file))
        raise ConfigError(f"{file}: `extends` makes a cycle ({chain})")
    data = read_file(file)
    parent = data.pop("extends", None)
    if parent is None:
        return data, [file]
    if not isinstance(parent, str) or not parent.strip():
        raise ConfigError(f"{file}: `extends` must name one preset or file (got {parent!r})")
    near = file.parent / parent
    try:
        parent_file = near if near.is_file() else resolve_path(parent)
    except ConfigError as e:
        raise ConfigError(f"{file}: extends {parent!r}: {e}") from None
    base, chain = load_data(parent_file, (*_seen, file))
    return merge(base, data), [*chain, file]


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> Config:
    """Load `path` (default: the tiny-cpu preset) with what it `extends`, apply overrides, validate.

    >>> cfg = load_config("tiny-cpu", ["train.steps=3"])
    >>> cfg.train.steps
    3
    """
    file = resolve_path(path or "tiny-cpu")
    data, chain = load_data(file)
    data_secrets: list[str] = []
    try:
        task_before = dict(data.get("task") or {}) if isinstance(data.get("task"), dict) else {}
        for item in overrides or []:
            parts, value = parse_override(item)
            _apply(data, parts, value, f"--set {shown(item)}")
        _check_task_rename(task_before, data, overrides or [])
        data_secrets = secret_values(data)
        origin = " extending ".join(str(f) for f in reversed(chain))
        origin += f" with --set {' '.join(map(shown, overrides))}" if overrides else ""
        try:
            return Config.model_validate(data)
        except ValidationError as e:
            raise ConfigError(explain(e, origin)) from None
    except ConfigError as e:
        # Belt and braces: whatever a message quotes (a validator's own text included), no secret.
        raise ConfigError(mask(str(e), data_secrets)) from None


def _check_task_rename(before: dict, data: dict, overrides: list[str]) -> None:
    """`--set task.name=X` keeps the file's task options, which belong to the file's task: refused,
    with how to replace the section instead (the options are validated by the task, after this)."""
    task = data.get("task") if isinstance(data.get("task"), dict) else {}
    renamed = "name" in task and task["name"] != before.get("name", "fund_assistant")
    kept = before.get("options") and task.get("options") == before.get("options")
    if renamed and kept and any(o.split("=", 1)[0].strip() == "task.name" for o in overrides):
        raise ConfigError(
            f"--set task.name={task['name']}: the config's task.options "
            f"({', '.join(sorted(before['options']))}) "
            f"belong to task {before.get('name', 'fund_assistant')!r}; replace the whole section instead: "
            f"--set 'task={{name: {task['name']}, options: {{...}}}}', or write a preset with "
            "`extends:` and its own `task:` section (naming another task replaces the base's task section)")


def secret_values(data: dict) -> list[str]:
    """The values under `cluster.env_vars` in raw config data, as text, longest first."""
    cluster = data.get("cluster")
    env = cluster.get("env_vars") if isinstance(cluster, dict) else None
    values = env.values() if isinstance(env, dict) else []
    return sorted({str(v) for v in values if v is not None}, key=len, reverse=True)


def mask(text: str, secrets: list[str]) -> str:
    """`text` with each secret of four or more characters replaced (shorter values, such as a thread
    count, are not tokens, and replacing them would garble unrelated numbers)."""
    for value in secrets:
        if len(value) >= 4:
            text = text.replace(value, REDACTED)
    return text


def config_from_data(data: dict, overrides: list[str] | None = None, origin: str = "config") -> Config:
    """A config from already-loaded data (a run's config.json), with `--set` overrides applied."""
    data = dict(data)
    for item in overrides or []:
        parts, value = parse_override(item)
        _apply(data, parts, value, f"--set {shown(item)}")
    try:
        return Config.model_validate(data)
    except ValidationError as e:
        raise ConfigError(mask(explain(e, origin), secret_values(data))) from None
