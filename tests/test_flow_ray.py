"""The same flow on a Ray cluster (a local Ray instance) writes the same bytes as on the default runner.

Needs the `ray` extra (`pip install -e ".[pipeline,ray]"`); skipped without it.
"""

import pytest
import yaml

from pipeline_support import SMOKE, isolate_env, make_workspace

pytest.importorskip("prefect_ray")
pytestmark = pytest.mark.slow


def outs(root):
    lock = yaml.safe_load((root / "dvc.lock").read_text())["stages"]
    return {stage: [o["md5"] for o in entry.get("outs", [])] for stage, entry in lock.items()}


def test_ray_and_process_pool_runners_agree(tmp_path, monkeypatch):
    from prefect.testing.utilities import prefect_test_harness

    from flows.cluster import zero_generation_ray
    from flows.generation import zero_generation

    monkeypatch.delenv("ZERO_RAY_ADDRESS", raising=False)
    roots = {name: make_workspace(tmp_path / name) for name in ("pool", "ray")}
    with prefect_test_harness(server_startup_timeout=120):
        for name, flow in (("pool", zero_generation), ("ray", zero_generation_ray)):
            isolate_env(monkeypatch, roots[name])
            record = flow(params_file=SMOKE, workdir=str(roots[name]))
            assert record["generation"] == 1
    assert outs(roots["pool"]) == outs(roots["ray"])
