"""zero-generation with its tasks on a Ray cluster, as an entry point for work-pool deployments.

The flow is the very same `zero-generation` (same name, same code); only the
task runner differs: prefect-ray's RayTaskRunner connected to ZERO_RAY_ADDRESS
(`127.0.0.1:6379` or `ray://head:10001`; unset starts a local Ray instance).
Each self-play, training and gate task asks Ray for `pipeline.num_gpus` GPUs,
and is refused with ClusterResourceError (flows.capacity), before it is
submitted, when no node of the cluster has that many.
Needs the `ray` extra: `pip install -e ".[pipeline,ray]"`.
"""

from __future__ import annotations

import os

try:
    from prefect_ray import RayTaskRunner
except ImportError as e:  # the ray extra is optional
    raise ImportError('flows.cluster needs prefect-ray: pip install -e ".[pipeline,ray]"') from e

from flows.generation import zero_generation


def on_ray(flow, address: str | None = None):
    """`flow` with its tasks on the Ray cluster at `address` (None: ZERO_RAY_ADDRESS, else a local instance)."""
    return flow.with_options(task_runner=RayTaskRunner(address=address or os.environ.get("ZERO_RAY_ADDRESS") or None))


zero_generation_ray = on_ray(zero_generation)
