"""Experiment trackers: where a run's config, metrics, eval tables and final outputs are sent."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from configs.base import Section

Backend = Literal["tensorboard", "mlflow", "wandb"]


class TrackingConfig(Section):
    """The trackers a run reports to, besides the files of its run directory."""

    backends: list[Backend] = Field(default_factory=lambda: ["tensorboard"])
    """Any of tensorboard (event files in <run>/tensorboard/), mlflow, wandb; mlflow and wandb need
    their extra (pip install '.[mlflow]', '.[wandb]'). An empty list sends nothing beyond the run's files."""
    mlflow_uri: str | None = None
    """MLflow tracking URI (http://host:5000, sqlite:///path.db); None: MLflow's own default,
    MLFLOW_TRACKING_URI when set."""
    project: str = Field("ngrpo-ray", min_length=1, max_length=128)
    """The MLflow experiment and the W&B project the run is logged under."""
    run_name: str | None = Field(None, min_length=1, max_length=128)
    """The run's name in the trackers; None: the name of its run directory."""

    @field_validator("backends")
    @classmethod
    def _once_each(cls, value: list[str]) -> list[str]:
        twice = sorted({b for b in value if value.count(b) > 1})
        if twice:
            raise ValueError(f"tracking.backends names {', '.join(twice)} more than once")
        return value
