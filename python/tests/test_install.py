"""The installed wheel: its script is the static binary, stamped with the wheel's version."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import pvisor


def test_binary_is_the_wheels_script() -> None:
    exe = pvisor.binary()
    # Installed by pip into this environment's bin/, next to its python.
    assert exe.parent == Path(sys.executable).parent.resolve() or exe.parent == Path(sys.prefix, "bin").resolve(), exe
    with open(exe, "rb") as f:
        assert f.read(4) == b"\x7fELF", f"{exe} is not the static binary"


def test_version_is_stamped() -> None:
    out = subprocess.run([str(pvisor.binary()), "--version"], capture_output=True, text=True, check=True).stdout
    assert out == f"pvisor {pvisor.__version__}\n"
    assert pvisor.version() == pvisor.__version__
    assert pvisor.__version__ not in ("dev", "0+unknown")
    assert out == subprocess.run([str(pvisor.binary()), "version"], capture_output=True, text=True).stdout


def test_pvisor_bin_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "pvisor"
    fake.write_text("#!/bin/sh\necho pvisor 9.9.9-fake\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PVISOR_BIN", str(fake))
    assert pvisor.binary() == fake
    assert pvisor.version() == "9.9.9-fake"
    monkeypatch.setenv("PVISOR_BIN", str(tmp_path / "missing"))
    with pytest.raises(pvisor.PvisorError) as e:
        pvisor.binary()
    assert e.value.category == "configuration_error" and e.value.exit_code == 2


def test_inspect_lists_the_steps(rollout: Path) -> None:
    s = pvisor.inspect(rollout)
    assert (s.agent, s.version, s.session_id) == ("codex", "0.171.0", "01a22998-569d-74b2-aebf-25f39bc1a17a")
    first = s.steps[0]
    assert first["ordinal"] == 1 and first["complete"] is True
    assert [c["name"] for c in first["tool_calls"]] == ["exec_command", "exec_command"]
    assert first["tool_calls"][0]["arguments"]["cmd"] == "ls -A"
    assert s.step_count == 5
    # The same as the agent given explicitly.
    assert pvisor.inspect(str(rollout), agent="codex").steps == s.steps


def test_inspect_failure_raises_with_its_category(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a session\n")
    with pytest.raises(pvisor.PvisorError) as e:
        pvisor.inspect(notes)
    assert (e.value.category, e.value.exit_code) == ("trajectory_error", 10)
    assert "not a session file of any known agent" in e.value.message
    with pytest.raises(pvisor.PvisorError) as e:
        pvisor.inspect(notes, agent="no-such-agent")
    assert (e.value.category, e.value.exit_code) == ("configuration_error", 2)


@pytest.mark.skipif(sys.version_info < (3, 10), reason="sys.stdlib_module_names is Python 3.10+")
def test_import_needs_nothing_but_the_standard_library() -> None:
    # A fresh interpreter that imports pvisor loads no third-party module.
    code = ("import sys; before = set(sys.modules); import pvisor; "
            "mods = {m.split('.')[0] for m in set(sys.modules) - before}; "
            "print(sorted(m for m in mods if m not in sys.stdlib_module_names and m != 'pvisor'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}).stdout
    assert out.strip() == "[]"
