"""The base of every config section: unknown keys and non-finite numbers are refused.

`use_attribute_docstrings` turns the one-line docstring under each field into its description, so
generated docs and error messages can name what a field means.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """A config section: extra keys forbidden, NaN/inf refused for every float, assignments validated."""

    model_config = ConfigDict(
        extra="forbid", use_attribute_docstrings=True, validate_assignment=True, allow_inf_nan=False
    )
