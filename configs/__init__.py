"""Pydantic configuration: one module per component, a root `Config`, and a YAML loader.

`load_config(path, overrides)` validates everything before any actor starts; errors come back as a
`ConfigError` whose message names the key, the file and what is allowed.
"""

from typing import Any

__all__ = ["Config", "ConfigError", "load_config"]


def __getattr__(name: str) -> Any:
    # Lazy: importing one section (configs.model) must not pull in every other section.
    if name == "Config":
        from configs.root import Config

        return Config
    if name in ("ConfigError", "load_config"):
        from configs import loader

        return getattr(loader, name)
    raise AttributeError(name)
