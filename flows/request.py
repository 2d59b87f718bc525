"""The parameters a flow run is given: which params file (plus overrides), which generation, which workspace.

zero-generation, zero-loop and zero-ladder take them as plain arguments (what a
Prefect deployment passes); GenerationRequest checks them and loads the Params.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from zero.config import load_params


class GenerationRequest(BaseModel):
    """The flow's parameters: which params file (plus overrides), which generation, which workspace."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    params_file: str = "params.yaml"
    overrides: list[str] = Field(default_factory=list)
    generation: int | None = Field(None, ge=1)
    workdir: str | None = None

    def root(self) -> Path:
        return Path(self.workdir or os.getcwd()).resolve()

    def load(self):
        """The validated Params (ConfigError naming the field on unknown keys or bad values)."""
        path = Path(self.params_file)
        return load_params(path if path.is_absolute() else self.root() / path, list(self.overrides))
