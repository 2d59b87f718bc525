"""zero-generation with its tasks on a Ray cluster, as an entry point for work-pool deployments.

The flow is the very same `zero-generation` (same name, same code); only the
task runner differs: prefect-ray's RayTaskRunner connected to ZERO_RAY_ADDRESS
(`127.0.0.1:6379` or `ray://head:10001`; unset starts a local Ray instance).
Each self-play, training and gate task asks Ray for `pipeline.num_gpus` GPUs,
and is refused with ClusterResourceError, before it is submitted, when no node
of the cluster has that many (Ray would otherwise keep it pending forever).
Needs the `ray` extra: `pip install -e ".[pipeline,ray]"`.
"""

from __future__ import annotations

import os

try:
    from prefect_ray import RayTaskRunner
except ImportError as e:  # the ray extra is optional
    raise ImportError('flows.cluster needs prefect-ray: pip install -e ".[pipeline,ray]"') from e

from flows.generation import zero_generation


class ClusterResourceError(RuntimeError):
    """The params ask for a resource (GPUs) that no node of the Ray cluster has."""


def node_resources() -> list[dict]:
    """The total resources of each live node of the connected Ray cluster."""
    import ray

    return [n["Resources"] for n in ray.nodes() if n.get("Alive")]


def require_resources(num_gpus: float) -> None:
    """Raise ClusterResourceError unless some node has `num_gpus` GPUs (a task runs on one node)."""
    if not num_gpus:
        return
    import ray

    most = max((r.get("GPU", 0.0) for r in node_resources()), default=0.0)
    if most < num_gpus:
        total = ray.cluster_resources().get("GPU", 0.0)
        raise ClusterResourceError(
            f"pipeline.num_gpus={num_gpus:g}: each task asks Ray for {num_gpus:g} GPU, but no node of the "
            f"cluster has that many (most on one node: {most:g}; cluster total: {total:g} GPU). Set "
            f"pipeline.num_gpus to {most:g} or fewer, or add nodes with GPUs"
        )


def on_ray(flow, address: str | None = None):
    """`flow` with its tasks on the Ray cluster at `address` (None: ZERO_RAY_ADDRESS, else a local instance)."""
    return flow.with_options(task_runner=RayTaskRunner(address=address or os.environ.get("ZERO_RAY_ADDRESS") or None))


zero_generation_ray = on_ray(zero_generation)
