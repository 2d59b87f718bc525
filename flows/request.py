"""The parameters a flow run is given: which params file (plus overrides), which generation, which workspace.

zero-generation, zero-loop and zero-ladder take them as plain arguments (what a
Prefect deployment passes); GenerationRequest checks them and loads the Params.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from zero.config import ConfigError, load_params


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
        """The validated Params (ConfigError naming the field on unknown keys or bad values, or the bfloat16
        switches on a CPU without bfloat16 instructions)."""
        path = Path(self.params_file)
        return runnable_here(load_params(path if path.is_absolute() else self.root() / path, list(self.overrides)))


def runnable_here(params):
    """The params, or ConfigError when this machine cannot run them as asked (zero.inference.bf16_refusal):
    a line must not run several times slower than it should with nothing but a warning to say so."""
    from zero.inference import bf16_refusal

    why = bf16_refusal(params)
    if why:
        raise ConfigError(why)
    return params
