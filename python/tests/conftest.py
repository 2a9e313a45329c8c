"""Fixtures of the pvisor wheel's tests: the repository's bundled sessions,
and the installed package (the suite tests the wheel, not the source tree)."""

from __future__ import annotations

import os
import sys
import tarfile
from pathlib import Path

import pytest

import pvisor

REPO = Path(os.environ.get("PVISOR_REPO") or Path(__file__).resolve().parents[2])
CODEX_SESSION = REPO / "testdata" / "e2e" / "sessions" / "codex@0.171.0"


def pytest_sessionstart(session: pytest.Session) -> None:
    # The package must be the installed wheel's, never python/src.
    here = Path(pvisor.__file__).resolve()
    if REPO / "python" / "src" in here.parents:
        raise pytest.UsageError(f"pvisor is imported from the source tree ({here}); install the wheel into the venv")


@pytest.fixture(scope="session")
def rollout() -> Path:
    files = sorted(CODEX_SESSION.glob("rollout-*.jsonl"))
    assert len(files) == 1, f"one bundled Codex rollout under {CODEX_SESSION}, found {files}"
    return files[0]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A fresh copy of the repository the bundled Codex session ran in."""
    ws = tmp_path / "workspace"
    ws.mkdir()
    with tarfile.open(CODEX_SESSION / "repo.tar.gz") as t:
        if sys.version_info >= (3, 12):
            t.extractall(ws, filter="tar")
        else:
            t.extractall(ws)
    return ws


@pytest.fixture
def dirs(tmp_path: Path) -> dict:
    """state_dir and output_dir keywords, apart from each other and the workspace."""
    return {"state_dir": tmp_path / "state", "output_dir": tmp_path / "out"}


@pytest.fixture(scope="session")
def codex() -> Path:
    """The real Codex CLI that make e2e / make demo install (install-clis.sh codex)."""
    e2e = os.environ.get("PVISOR_E2E_DIR")
    base = Path(e2e) if e2e else REPO / ".e2e"
    cli = base / "bin" / "codex"
    if not os.access(cli, os.X_OK):
        pytest.skip(f"no Codex CLI at {cli}: run `bash testdata/e2e/install-clis.sh codex` (make e2e does)")
    return cli
