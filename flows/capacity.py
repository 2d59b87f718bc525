"""What a Ray cluster's nodes hold, and the refusal of a task that asks for more than any node has.

A task runs on one node, so a task asking Ray for more GPUs than the largest
node has would stay pending forever; it is refused with ClusterResourceError,
before it is submitted, naming the params field to change. Ray is imported
only when a check runs: the flow imports this module on any task runner.
"""

from __future__ import annotations


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
