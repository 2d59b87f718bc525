"""Self-play on a Ray cluster by long-lived actors that load the network once per generation.

With `pipeline.selfplay_actors: N` (N > 0) and the flow on a RayTaskRunner,
the flow starts N named actors for the generation's self-play, each holding
`pipeline.num_gpus` GPUs and one CPU, spread over the nodes. Shard k's Prefect
task (flows.generation) finds actor k mod N by its name and waits for it to
play the shard: the task stays the unit the flow, its retries and its cache
see, the actor only keeps the network between shards. An actor plays through
the same `flows.stages.selfplay_shard` as a task of its own would, so the
shards, their SGF and dvc.lock are the same bytes; it reads the network again
only when the checkpoint's sha256 changes. Actors belong to the flow's Ray
driver and are ended when self-play ends (their GPUs go to training and the
gate) or when the flow process dies. An actor whose process dies is restarted
by Ray (at most RESTARTS times) and the shard's task fails and retries on it.

Needs the `ray` extra; `zero` itself imports no Ray.
"""

from __future__ import annotations

import os
import time
import warnings

import ray

from flows import stages
from flows.capacity import ClusterResourceError, node_resources, require_resources

RESTARTS = 3  # per actor and generation; a task retries once (flows.generation), so a shard survives one death
READY_S = 600.0  # how long the flow waits for its actors to be placed and started


def actor_names(tag: str, n: int) -> list[str]:
    """The actors of a game line: `zero-selfplay-<tag>-<i>`, so two lines never share a network."""
    return [f"zero-selfplay-{tag}-{i}" for i in range(n)]


class SelfPlayer:
    """Plays self-play shards on request with a network it loads once and keeps (SelfPlayActor on Ray).

    Shards are played one at a time; on Ray, `pid` and `report` answer while a shard is being played.
    """

    def __init__(self):
        self._key = None  # (checkpoint sha256, device) of the network held
        self._net = None
        self.loads: dict[str, int] = {}  # checkpoint sha256 -> times this process read it
        self.shards: list[str] = []  # `<generation>/<shard>` played by this process

    def _network(self, checkpoint, device):
        """The network of `checkpoint` on `device`, read from the file only when its sha256 changed."""
        from zero.network import load_checkpoint

        key = (stages.file_sha256(checkpoint), str(device))
        if key != self._key:
            self._net, self._key = None, None
            self._net, _ = load_checkpoint(checkpoint, device)
            self._key = key
            self.loads[key[0]] = self.loads.get(key[0], 0) + 1
        return self._net

    def play(self, root: str, gen_rel: str, shard: int) -> dict:
        """Shard `shard` of the generation `gen_rel` in workspace `root` (flows.stages.selfplay_shard)."""
        stats = stages.selfplay_shard(stages.parse_gen_dir(gen_rel, root), shard, load_network=self._network)
        self.shards.append(f"{gen_rel}/{shard}")
        return stats

    @ray.method(concurrency_group="info")
    def pid(self) -> int:
        return os.getpid()

    @ray.method(concurrency_group="info")
    def report(self) -> dict:
        """What this process did: network loads per checkpoint sha256, shards played, whether Ray restarted it."""
        with warnings.catch_warnings():  # Ray marks the property's own internals deprecated
            warnings.simplefilter("ignore", DeprecationWarning)
            restarted = bool(ray.get_runtime_context().was_current_actor_reconstructed)
        return {"pid": os.getpid(), "loads": dict(self.loads), "shards": list(self.shards), "restarted": restarted}


SelfPlayActor = ray.remote(concurrency_groups={"info": 1})(SelfPlayer)


def require_actor_resources(n: int, num_gpus: float) -> None:
    """Raise ClusterResourceError unless the cluster's nodes can hold n actors of one CPU and `num_gpus` GPUs."""
    require_resources(num_gpus)
    nodes = node_resources()
    fit = sum(int(min(r.get("CPU", 0.0), r.get("GPU", 0.0) / num_gpus if num_gpus else float("inf")))
              for r in nodes)
    if fit < n:
        each = f"one CPU and {num_gpus:g} GPU" if num_gpus else "one CPU"
        raise ClusterResourceError(
            f"pipeline.selfplay_actors={n}: each self-play actor asks Ray for {each}, but the cluster's "
            f"{len(nodes)} nodes hold only {fit} such actors. Set pipeline.selfplay_actors to {fit} or fewer, "
            f"or add nodes"
        )


class SelfPlayActors:
    """The self-play actors of one generation, started on entry and ended on exit (their GPUs freed).

        with SelfPlayActors(tag, n, num_gpus) as names:
            ... each shard's task plays on names[k % n] (play_on) ...
    """

    def __init__(self, tag: str, n: int, num_gpus: float):
        self.names, self.num_gpus = actor_names(tag, n), num_gpus
        self.handles: list = []
        self.reports: list[dict] = []

    def __enter__(self) -> list[str]:
        require_actor_resources(len(self.names), self.num_gpus)
        options = {"num_cpus": 1, "num_gpus": self.num_gpus, "max_restarts": RESTARTS, "get_if_exists": True,
                   "scheduling_strategy": "SPREAD"}
        try:
            self.handles = [SelfPlayActor.options(name=name, **options).remote() for name in self.names]
            ready, pending = ray.wait([h.pid.remote() for h in self.handles], num_returns=len(self.handles),
                                      timeout=READY_S)
            ray.get(ready)  # an actor that failed to start raises here
        except BaseException:
            self._end()
            raise
        if pending:
            self._end()
            raise ClusterResourceError(
                f"pipeline.selfplay_actors={len(self.names)}: {len(pending)} self-play actors were not placed "
                f"on the cluster within {READY_S:.0f}s (each asks for one CPU and {self.num_gpus:g} GPU); "
                f"free the cluster's resources or set pipeline.selfplay_actors lower"
            )
        return list(self.names)

    def __exit__(self, *exc) -> None:
        try:
            self.reports = [dict(ray.get(h.report.remote(), timeout=60), name=name)
                            for name, h in zip(self.names, self.handles)]
        except (ray.exceptions.RayError, TimeoutError):
            self.reports = []
        self._end()

    def _end(self) -> None:
        for h in self.handles:
            ray.kill(h, no_restart=True)
        self.handles = []


def play_on(name: str, root: str, gen_rel: str, shard: int) -> dict:
    """Play a shard on the named actor and wait for it (from a Prefect task on a Ray worker).

    An actor that Ray is restarting is waited for (at most READY_S); one whose process
    dies while it plays raises here (ray.exceptions.RayActorError), so the task fails
    and retries on the restarted actor. A task never waits on a process that is gone.
    """
    try:
        actor = ray.get_actor(name)
    except ValueError:
        raise RuntimeError(f"self-play actor {name} is not running (it ends with its generation's self-play); "
                           f"retry the flow run") from None
    deadline = time.monotonic() + READY_S
    while True:
        try:
            ray.get(actor.pid.remote(), timeout=READY_S)
            break
        except ray.exceptions.ActorUnavailableError:  # being restarted; ActorDiedError (for good) goes up
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)
    return ray.get(actor.play.remote(root, gen_rel, shard))
