"""The pipeline for a machine without network access: infra/offline_bundle.py's archive and infra/offline-install.sh."""

import importlib.util
import json
import shutil
import subprocess
import sys
import sysconfig
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


@pytest.mark.slow
def test_offline_install_builds_a_workspace_over_the_machines_packages(tmp_path):
    """A copy of the repository installed from an archive with no index: the machine's packages (here this
    venv's, as BASE_SITE) seen beneath .venv, the archive's wheels and zero in it, make's stamp written."""
    work = tmp_path / "work"
    shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(".venv", ".git", "gens", ".prefect", "mlflow.db",
                                                                "dvc-remote", "reproduce", ".pachi", ".offline"))
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
    site = sysconfig.get_paths()["purelib"]
    got = subprocess.run(["bash", "infra/offline-install.sh", str(archive)], cwd=work, capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", "BASE_SITE": site, "PYTHON": sys.executable, "HOME": str(tmp_path)})
    assert got.returncode == 0, got.stderr[-2000:]
    assert "1 wheels" in got.stdout and (work / ".venv" / ".zero-installed").is_file()
    check = subprocess.run([str(work / ".venv" / "bin" / "python"), "-c",
                            "import zero, zero_offline_probe, prefect, mlflow; print(zero.__file__, zero_offline_probe.ANSWER)"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert check.returncode == 0, check.stderr[-2000:]
    assert check.stdout.split() == [str(work / "zero" / "__init__.py"), "42"]
