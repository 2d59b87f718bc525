"""zero-generation with its tasks on a Ray cluster, as an entry point for work-pool deployments.

The flow is the very same `zero-generation` (same name, same code); only the
task runner differs: prefect-ray's RayTaskRunner connected to ZERO_RAY_ADDRESS
(e.g. `ray://head:10001`; unset starts a local Ray instance). Each self-play,
training and gate task asks Ray for `pipeline.num_gpus` GPUs. Needs the `ray`
extra: `pip install -e ".[pipeline,ray]"`.
"""

from __future__ import annotations

import os

try:
    from prefect_ray import RayTaskRunner
except ImportError as e:  # the ray extra is optional
    raise ImportError('flows.cluster needs prefect-ray: pip install -e ".[pipeline,ray]"') from e

from flows.generation import zero_generation

zero_generation_ray = zero_generation.with_options(
    task_runner=RayTaskRunner(address=os.environ.get("ZERO_RAY_ADDRESS") or None)
)
