"""The parameters a flow run is given: which params file (plus overrides), which generation, which workspace.

zero-generation, zero-loop and zero-ladder take them as plain arguments (what a
Prefect deployment passes); GenerationRequest checks them, loads the Params and
names them in the run's log. A run refused because another holds its line ends
Cancelled, with the holder to watch or cancel (`refusal`); `make run` asks
`line_holder` first, so that it refuses in a second without starting a run.
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
        params = runnable_here(load_params(path if path.is_absolute() else self.root() / path, list(self.overrides)))
        _log(f"params: {self.params_file}{' with ' + ' '.join(self.overrides) if self.overrides else ''} "
             f"({params.game.tag}, params hash {params.digest()[:12]})"
             + (f"; the default, {DEFAULT_PARAMS_NOTE}" if self.params_file == DEFAULT_PARAMS else ""))
        return params

    def refused(self, params):
        """The Cancelled state of a run refused because another run holds its line: whom to watch or cancel."""
        from prefect.states import Cancelled

        holder = line_holder(self.root(), params.game.tag) or {}
        return Cancelled(message=REFUSED + busy_advice(params.game.tag, holder, os.environ.get("PREFECT_API_URL")))


DEFAULT_PARAMS = "params.yaml"
DEFAULT_PARAMS_NOTE = "the 9x9 Go generation (about an hour); `--param params_file=params-smoke.yaml` is the smoke run"
REFUSED = "refused, no work done: "


def _log(line: str) -> None:
    """A line in the flow run's log (Prefect's run logger); outside a run, nothing."""
    from prefect.exceptions import MissingContextError
    from prefect.logging import get_run_logger

    try:
        get_run_logger().info(line)
    except MissingContextError:
        pass


def line_holder(root: Path, tag: str) -> dict | None:
    """Who holds the line's lock (generation, owner: the flow run id, pid, host, since), or None if nobody does.

    Read without taking the lock: a holder whose process is provably gone holds nothing."""
    from flows.layout import Workspace
    from flows.liveness import ProcessId

    holder = Workspace(root).lock(tag, 0).holder()
    if not holder.get("pid"):
        return None
    proc = ProcessId.from_dict({"host": holder.get("host", ""), "pid": holder["pid"]})
    return None if proc is None or proc.gone() else holder


def busy_advice(tag: str, holder: dict, api_url: str | None = None) -> str:
    """What a refused run says: which run holds the line, where to watch it, how to cancel it."""
    owner = holder.get("owner") or "?"
    ui = api_url.rsplit("/api", 1)[0] if api_url else None
    watch = f"{ui}/runs/flow-run/{owner}" if ui else f"flow run {owner} in the Prefect UI"
    return (f"generation {holder.get('generation', '?')} of {tag} is already running as flow run {owner} "
            f"(pid {holder.get('pid', '?')} on {holder.get('host', '?')}, since {holder.get('since', '?')}). "
            f"Watch it: {watch} . Or cancel it: `prefect flow-run cancel {owner}` (what it finished is kept: "
            f"`python -m flows.serve retry {owner}` resumes it)")


def runnable_here(params):
    """The params, or ConfigError when this machine cannot run them as asked (zero.inference.bf16_refusal):
    a line must not run several times slower than it should with nothing but a warning to say so."""
    from zero.inference import bf16_refusal

    why = bf16_refusal(params)
    if why:
        raise ConfigError(why)
    return params
