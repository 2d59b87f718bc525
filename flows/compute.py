"""What a run used: wall time, the cores it could use, CPU time where measured, GPU-hours only where a GPU
did the work. The record every generation, ladder and standalone run keeps (`compute` in their JSON), and
how it is read back from a generation's record."""

from __future__ import annotations

import time

from zero.config import usable_cores


def used_gpus(params) -> int:
    """1 when a stage of `params` runs its network on CUDA here (a stage uses one device), else 0."""
    import torch

    if not torch.cuda.is_available():
        return 0
    wants = {params.selfplay.device, params.train.device, params.gate.device}
    return int(any(d == "auto" or d.startswith("cuda") for d in wants))


def compute_record(wall_s: float, gpus: int = 0, cpu_s: float | None = None) -> dict:
    """The compute of a run of `wall_s` seconds on this machine, `gpus` of its GPUs doing work."""
    import torch

    cores = usable_cores()
    out = {"device": "cuda" if gpus else "cpu", "cores": cores, "gpus": gpus, "wall_s": round(wall_s, 1),
           "core_hours": round(wall_s * cores / 3600, 4), "gpu_hours": round(wall_s * gpus / 3600, 4),
           "gpu_name": torch.cuda.get_device_name(0) if gpus else None}
    if cpu_s is not None:
        out.update(cpu_s=round(cpu_s, 1), cpu_hours=round(cpu_s / 3600, 4))
    return out


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the stages' worker processes, DVC)."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def stage_cpu_seconds() -> float:
    """CPU time of this process so far, all its threads (torch's, numba's): a stage's own work is the
    difference across it. A stage worker runs one stage at a time, so the difference is that stage's."""
    return time.process_time()


def fresh_cpu_seconds(results: list[dict]) -> float:
    """The CPU time the stages behind `results` spent in this run: a result reused from the cache or from
    a file an earlier run wrote counts nothing (its time was spent, and recorded, by that run)."""
    return sum(r.get("cpu_s", 0.0) for r in results if not r.get("reused"))


def earlier_cpu_seconds(results: list[dict]) -> float:
    """The CPU time earlier attempts of this generation spent on the `results` this run reused: a cached
    task's own `cpu_s`, or the `earlier_cpu_s` a stage read from the spent/ file beside an output on disk."""
    return sum(r.get("cpu_s") or r.get("earlier_cpu_s", 0.0) for r in results if r.get("reused"))


def machine_compute(seconds: float, params=None, cpu_s: float | None = None) -> dict:
    """The compute record of a flow's run of `seconds`: GPU-hours only where its params put a stage on a GPU;
    with `cpu_s`, the CPU time the run's processes used beside wall time x cores (on a shared machine the
    latter counts time lost to other jobs)."""
    return compute_record(seconds, used_gpus(params) if params is not None else 0, cpu_s)


def compute_of(record: dict) -> dict:
    """A generation's compute: the pipeline's wall time times the cores (or GPUs) it had.

    Records written before compute was recorded count their wall time on one core, marked estimated.
    """
    c = record.get("compute")
    if c:
        return c
    return {"device": "cpu", "cores": 1, "gpus": 0, "wall_s": record.get("seconds", 0.0),
            "core_hours": record.get("seconds", 0.0) / 3600, "gpu_hours": 0.0, "estimated": True}
