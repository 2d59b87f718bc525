"""Code lineage: a campaign ships champions only from committed code."""

import subprocess

import pytest

from flows.lineage import LineageError, code_state, main, require_committed


def _git(root, *args):
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"})


@pytest.fixture
def checkout(tmp_path):
    (tmp_path / "zero").mkdir()
    (tmp_path / "zero" / "search.py").write_text("C_PUCT = 1.5\n")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "go-9.json").write_text("{}\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "first")
    return tmp_path


def test_committed_code_passes_and_names_its_commit(checkout, capsys):
    commit = require_committed(checkout)
    assert len(commit) == 40
    assert code_state(checkout) == {"git_commit": commit, "git_dirty": "false", "requirements_lock_sha256": ""}
    # what a campaign writes (models/, generations) is not code
    (checkout / "models" / "go-9.json").write_text('{"champion": 12}\n')
    assert require_committed(checkout) == commit
    assert main(["committed", "--root", str(checkout)]) == 0
    assert commit[:12] in capsys.readouterr().out


@pytest.mark.parametrize("change", ["edit", "new file"])
def test_changed_code_is_refused_naming_the_file(checkout, change, capsys):
    if change == "edit":
        (checkout / "zero" / "search.py").write_text("C_PUCT = 2.5\n")
        name = "zero/search.py"
    else:
        (checkout / "zero" / "trick.py").write_text("x = 1\n")
        name = "zero/trick.py"
    with pytest.raises(LineageError, match=f"{name}.*committed code only"):
        require_committed(checkout)
    assert code_state(checkout)["git_dirty"] == "true"
    assert main(["committed", "--root", str(checkout)]) == 1
    assert name in capsys.readouterr().err


def test_a_folder_that_is_no_checkout_is_refused(tmp_path):
    (tmp_path / "zero").mkdir()
    with pytest.raises(LineageError, match="committed code only"):
        require_committed(tmp_path)


def test_the_lock_the_libraries_came_from_is_recorded_and_is_code(checkout):
    import hashlib

    lock = checkout / "requirements.lock"
    lock.write_text("numpy==2.4.6\n")
    _git(checkout, "add", ".")
    _git(checkout, "commit", "-q", "-m", "lock")
    state = code_state(checkout)
    assert state["requirements_lock_sha256"] == hashlib.sha256(b"numpy==2.4.6\n").hexdigest()
    assert state["git_dirty"] == "false"
    lock.write_text("numpy==2.5.0\n")  # another library version is another lineage
    with pytest.raises(LineageError, match="requirements.lock.*committed code only"):
        require_committed(checkout)
