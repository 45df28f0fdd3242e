"""`make install` and `make install-light` on a venv of their own: stamped on
the package metadata's content (a fresh checkout beside a venv restored from
a cache installs nothing; changed metadata installs again), and a venv whose
interpreter is gone (the runner image moved Python) is made again.

pip stands in: a ``pip`` package first on ``PYTHONPATH`` records what it was
asked to install and installs nothing, so no test downloads anything."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BASE_PYTHON = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"

FAKE_PIP = '''
import os, sys
with open(os.environ["PIP_LOG"], "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
'''


def _tool_cache(root: Path, version: str) -> Path:
    """A tool cache's Python at ``version`` (this machine's interpreter under
    that name), as actions/setup-python lays one out."""
    bin_dir = root / "Python" / version / "x64" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python3").symlink_to(BASE_PYTHON)
    return bin_dir / "python3"


@pytest.fixture
def project(tmp_path):
    """The Makefile and the package metadata in a folder of their own, a
    stand-in pip, and a tool cache."""
    work = tmp_path / "work"
    work.mkdir()
    for name in ("Makefile", "setup.cfg", "pyproject.toml"):
        shutil.copy2(ROOT / name, work / name)
    (tmp_path / "fake" / "pip").mkdir(parents=True)
    (tmp_path / "fake" / "pip" / "__init__.py").write_text("")
    (tmp_path / "fake" / "pip" / "__main__.py").write_text(FAKE_PIP)
    return work


def _make(work: Path, target: str, python: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{work.parent / 'fake'}{os.pathsep}{ROOT}",
           "PIP_LOG": str(work.parent / "pip.log")}
    env.pop("TORCH_INDEX_URL", None)
    env.pop("VENV", None)
    return subprocess.run(["make", "-s", target, f"PYTHON={python}"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)


def _installs(work: Path) -> list[str]:
    log = work.parent / "pip.log"
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return lines


@pytest.mark.parametrize("target, stamp", [
    ("install", ".installed"),
    pytest.param("install-light", ".installed-light", marks=pytest.mark.slow),  # the same rule, slow as the first
])
def test_install_follows_the_metadata_and_the_interpreter(project, target, stamp):
    old = _tool_cache(project.parent / "toolcache", "3.11.7")
    # A venv made by the old Python, its stamp holding this metadata, as a cache restores it.
    subprocess.run([str(old), "-m", "venv", "--without-pip", str(project / ".venv")], check=True, timeout=120)
    metadata = _make(project, "install-metadata", old).stdout
    (project / ".venv" / stamp).write_text(metadata)
    os.utime(project / ".venv" / stamp, (time.time() - 86400,) * 2)  # restored from yesterday's cache

    # A checkout writes the metadata anew (new mtimes, same content): nothing to install.
    os.utime(project / "setup.cfg")
    os.utime(project / "pyproject.toml")
    done = _make(project, target, old)
    assert done.returncode == 0, done.stderr
    assert _installs(project) == []

    # The metadata changed: it installs again, and stamps the new content.
    with open(project / "setup.cfg", "a") as cfg:
        cfg.write("\n# a new pin\n")
    done = _make(project, target, old)
    assert done.returncode == 0, done.stderr
    assert any(line.startswith("install") and "-e" in line.split() for line in _installs(project))
    assert (project / ".venv" / stamp).read_text() == _make(project, "install-metadata", old).stdout != metadata

    # The runner's Python moved: the venv's interpreter is gone, the stamp as
    # before.  make install makes the venv again with the new Python.
    shutil.rmtree(project.parent / "toolcache" / "Python" / "3.11.7")
    assert not os.access(project / ".venv" / "bin" / "python", os.X_OK)
    new = _tool_cache(project.parent / "toolcache", "3.11.9")
    done = _make(project, target, new)
    assert done.returncode == 0, done.stdout + done.stderr
    assert os.readlink(project / ".venv" / "bin" / "python3") == str(new)
    assert "3.11.9" in (project / ".venv" / "pyvenv.cfg").read_text()
    assert any(line.startswith("install") for line in _installs(project))
    assert (project / ".venv" / stamp).read_text() == _make(project, "install-metadata", new).stdout
    done = _make(project, target, new)  # and then it is current
    assert done.returncode == 0 and _installs(project) == [], done.stderr
