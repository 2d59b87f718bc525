"""The pipeline for a machine without network access: infra/offline_bundle.py's archive and infra/offline-install.sh."""

import hashlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("offline_bundle", ROOT / "infra" / "offline_bundle.py")
offline_bundle = importlib.util.module_from_spec(spec)
spec.loader.exec_module(offline_bundle)


def test_the_archive_holds_the_locked_packages_the_machine_lacks(tmp_path):
    lock = tmp_path / "requirements.lock"
    lock.write_text("# a lock\nprefect==3.8.8\nNumPy==2.4.6\nray==2.60.0\nsgfmill==1.1.1  # SGF\ntorch==2.13.0\n")
    base = tmp_path / "base.txt"
    base.write_text("# the image's\nnumpy\n")
    assert offline_bundle.requirements(lock, offline_bundle.read_base(base)) == ["prefect==3.8.8", "sgfmill==1.1.1"]
    lock.write_text("prefect>=3\n")
    with pytest.raises(offline_bundle.BundleError, match="'prefect>=3' is not pinned"):
        offline_bundle.requirements(lock, set())
    with pytest.raises(offline_bundle.BundleError, match="a CPython version"):
        offline_bundle.bundle("3", None, tmp_path / "x.tar.xz", lock)
    # the real lock: the servers' packages in, the Ray cluster's and torch out
    reqs = {r.split("==")[0].lower() for r in offline_bundle.requirements(ROOT / "requirements.lock", set())}
    assert {"prefect", "mlflow", "dvc", "asyncpg", "sgfmill"} <= reqs and not {"ray", "torch", "playwright"} & reqs


def _wheel(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return path


def test_a_stored_wheel_keeps_every_file_and_a_headless_one_drops_the_ui_pages(tmp_path):
    files = {"prefect/__init__.py": b"x = 1\n" * 100, "prefect/server/ui/index.html": b"<html>" * 100,
             "prefect/server/ui-v2/app.js": b"js;" * 100, "prefect-3.8.8.dist-info/RECORD": b"prefect/__init__.py,,\n"}
    src = _wheel(tmp_path / "prefect-3.8.8-py3-none-any.whl", files)
    for headless, kept in ((False, set(files)), (True, {"prefect/__init__.py", "prefect-3.8.8.dist-info/RECORD"})):
        dest = tmp_path / f"headless-{headless}"
        dest.mkdir()
        with zipfile.ZipFile(offline_bundle.stored(src, dest, headless)) as z:
            assert {i.filename for i in z.infolist()} == kept
            assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())
            assert all(z.read(name) == files[name] for name in kept)


def test_offline_install_refuses_an_archive_for_another_python_or_none(tmp_path):
    archive = tmp_path / "wheels.tar.xz"
    run = lambda: subprocess.run(["bash", str(ROOT / "infra" / "offline-install.sh"), str(archive)], cwd=tmp_path,
                                 capture_output=True, text=True)
    got = run()
    assert got.returncode == 2 and "no such archive" in got.stderr
    with tarfile.open(archive, "w:xz"):
        pass
    (tmp_path / "wheels.tar.xz.json").write_text(json.dumps({"python": "2.7"}))
    got = run()
    assert got.returncode == 2 and "wheels for CPython 2.7" in got.stderr and not (tmp_path / ".venv").exists()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _scripts_of_the_base(venv: Path) -> None:
    """The commands the archive's wheels would have put in .venv/bin (prefect, dvc, mlflow), for a base whose
    packages are this venv's: here they come from the base, which brings no scripts into .venv."""
    from importlib.metadata import entry_points

    for ep in entry_points(group="console_scripts"):
        if ep.name in ("prefect", "dvc", "mlflow"):
            module, _, attr = ep.value.partition(":")
            script = venv / "bin" / ep.name
            script.write_text(f"#!{venv / 'bin' / 'python'}\nimport sys\nfrom {module} import {attr.split('.')[0]}\n"
                              f"sys.exit({attr}())\n")
            script.chmod(0o755)


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("mode", ["run", "loop", "alone"])
def test_an_offline_workspace_runs_the_pipeline_as_infra_gpu_line_does(tmp_path, mode):
    """A copy of the repository without .git (as a GPU box gets it), installed from an archive with no index
    over a venv's interpreter (as a CUDA image's python3 is one): that venv's packages (here this one's) seen
    beneath .venv, the archive's wheels and zero in it; then infra/gpu-line.sh starts the servers, runs a
    generation as a flow run of zero-generation (`run`) and the next one by flows.standalone in a copy, both
    with ZERO_GPU_SET's settings over the params file, or as a flow run of zero-loop without the standalone
    one (`loop`, ZERO_GPU_STANDALONE=0: the line first), and writes their records, the MLflow store, the
    flow's champion and that champion shipped to OUT, with the CUDA graph's test and the training step
    timed by zero bench with and without train.cuda_graph (`alone`: no flow generation, no servers, the
    standalone one alone). About 4 minutes on a shared core: the install compiles zero's kernels in the
    copy, and the servers start as on the GPU box."""
    work = tmp_path / "work"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True)
    for name in tracked.stdout.split("\0"):  # the files a GPU box gets: the tracked tree, no .git
        if name and (ROOT / name).is_file():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, work / name)
    probe = tmp_path / "probe"
    (probe / "zero_offline_probe").mkdir(parents=True)
    (probe / "zero_offline_probe" / "__init__.py").write_text("ANSWER = 42\n")
    (probe / "pyproject.toml").write_text('[project]\nname = "zero-offline-probe"\nversion = "1.0"\n')
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(tmp_path / "wheels"), str(probe)], check=True)
    archive = tmp_path / "wheels.tar.xz"
    with tarfile.open(archive, "w:xz") as tar:
        for w in (tmp_path / "wheels").glob("*.whl"):
            tar.add(w, arcname=w.name)
    (tmp_path / "wheels.tar.xz.json").write_text(json.dumps({"python": "%d.%d" % sys.version_info[:2]}))
    assert sys.prefix != sys.base_prefix  # the tests' interpreter is a venv's, as the GPU image's python3 is
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path), "PYTHON": sys.executable,
           "ZERO_OFFLINE_ARCHIVE": str(archive),
           "PREFECT_PORT": str(_free_port()), "MLFLOW_PORT": str(_free_port()), "ZERO_GPU_LINE_SECONDS": "900",
           "ZERO_GPU_SET": "gate.games=6",  # set over the params file, for the flow and the standalone alike
           "ZERO_GPU_STANDALONE": "0" if mode == "loop" else "1"}
    out = tmp_path / "out"
    installed = subprocess.run(["bash", "infra/offline-install.sh", str(archive)], cwd=work, capture_output=True,
                               text=True, env=env)
    assert installed.returncode == 0, installed.stderr[-2000:]
    assert "1 wheels" in installed.stdout and (work / ".venv" / ".zero-installed").is_file()
    _scripts_of_the_base(work / ".venv")
    args = ["0", "run"] if mode == "alone" else ["1", mode]
    got = subprocess.run(["bash", "infra/gpu-line.sh", str(out), "params-smoke.yaml", *args], cwd=work,
                         capture_output=True, text=True, env=env, timeout=1200)
    log = (out / "log.txt").read_text() if (out / "log.txt").is_file() else ""
    assert got.returncode == 0, got.stdout[-2000:] + got.stderr[-2000:] + log[-3000:]
    run = (out / "run.txt").read_text()
    if mode == "alone":
        assert "check: rc 0," in run and "standalone: rc 0," in run and "up: " not in run, run + log[-3000:]
        records = json.loads((out / "generations.json").read_text())
        assert [(r["kind"], r["record"]["generation"]) for r in records] == [("standalone", 1)]
        assert records[0]["record"]["nn_evals"] > 0 and not (out / "champion.pt").exists()
        return
    steps = ("check", "up", "flow-1", "standalone", "ship") if mode == "run" else ("check", "up", "flow-loop", "ship")
    for step in steps + ("test-cuda-graph", "bench-train-cuda_graph-true", "bench-train-cuda_graph-false"):
        assert f"{step}: rc 0," in run, run + log[-3000:]
    assert re.search(r"^1 passed, 1 skipped", run, re.M), run  # the CUDA graph's test needs a CUDA device
    assert len(re.findall(r"^training, batch \d+: [0-9,]+ positions/s", run, re.M)) == 2, run
    if mode == "run":  # where the time went: the flow's generation beside the standalone one (flows.timeline)
        assert "flow generations 1; standalone 2: the flow makes" in run, run
        assert re.search(r"^selfplay +[0-9.]+ +[0-9.]+ +-?[0-9.]+$", run, re.M), run
    else:
        assert "standalone: none asked for (ZERO_GPU_STANDALONE=0)" in run and "standalone: rc" not in run, run
    check = subprocess.run([str(work / ".venv" / "bin" / "python"), "-c",
                            "import zero, zero_offline_probe; print(zero.__file__, zero_offline_probe.ANSWER)"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert check.stdout.split() == [str(work / "zero" / "__init__.py"), "42"], check.stderr[-2000:]
    records = json.loads((out / "generations.json").read_text())
    assert [(r["kind"], r["record"]["generation"]) for r in records] == \
        [("flow", 1)] + ([("standalone", 2)] if mode == "run" else [])
    flow = records[0]["record"]
    assert flow["git_commit"] == "none" and flow["remote"]["pushed"] and flow["mlflow_run_id"]
    champion = out / "champion.pt"  # the flow's champion after its generation, to measure elsewhere
    assert hashlib.sha256(champion.read_bytes()).hexdigest() == flow["champion_after"]["sha256"]
    # the same champion shipped, without its window: to unpack into models/ at home
    with tarfile.open(out / "ship.tar") as tar:
        names = {n.removeprefix("./") for n in tar.getnames()}
        lineage = json.load(tar.extractfile(next(m for m in tar.getmembers() if m.name.endswith(".json")
                                                 and "/" not in m.name.removeprefix("./"))))
    tag = lineage["line"]
    assert {f"{tag}.pt", f"{tag}.json", f"{tag}.reproduce/recipe.json"} <= names and f"{tag}.window" not in names
    assert lineage["sha256"] == flow["champion_after"]["sha256"] and lineage["window"] is None
    # the evaluations a second over each side's generation, from the records' counts
    evals = re.search(r"^evaluations/s over a generation: flow ([0-9,]+)(; standalone ([0-9,]+))?$", run, re.M)
    assert evals and bool(evals.group(2)) == (mode == "run") and flow["selfplay"]["nn_evals"] > 0, run
    assert mode == "loop" or records[1]["record"]["games"] > 0
    assert "params: params-smoke.yaml with gate.games=6" in run, run
    assert [sum(r["record"]["gate"][k] for k in ("wins", "losses", "draws")) for r in records] == [6] * len(records)
    served = (out / "flow.log").read_text()
    assert (out / "mlflow.db.xz").stat().st_size > 0 and "zero-generation" in served
    assert ("for flow 'zero-loop'" in served) == (mode == "loop")
