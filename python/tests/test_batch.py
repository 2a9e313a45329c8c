"""pvisor.batch through the installed wheel: a two-run batch and its report."""

from __future__ import annotations

from pathlib import Path

import pytest

import pvisor
from conftest import CODEX_SESSION


def _study(tmp_path: Path) -> Path:
    toml = tmp_path / "study.toml"
    toml.write_text(f"""
[batch]
output_dir = "out"
jobs = 2

[replay]
replay_only = true

[[runs]]
agent = "codex"
trajectories = ["{CODEX_SESSION}/rollout-*.jsonl"]
after_steps = [1, 3]
workspace = "{CODEX_SESSION}/repo.tar.gz"
""")
    return toml


def test_two_run_batch_and_its_report(tmp_path: Path) -> None:
    b = pvisor.batch.run(_study(tmp_path))
    assert b.result.ok and b.result.metadata["batch"]["runs"] == 2
    assert b.output_dir == tmp_path / "out"
    assert len(b.runs) == 2
    assert sorted(r["after_step"] for r in b.runs) == [1, 3]
    for r in b.runs:
        assert r["agent"] == "codex" and r["exit_code"] == 0
        assert r["result"]["phase"] == "replayed"
    assert sorted(r["result"]["replayed_tool_calls"] for r in b.runs) == [2, 5]

    rep = pvisor.batch.report(b.output_dir)
    assert len(rep.runs) == 2 and rep.groups
    assert {r["run_id"] for r in rep.runs} == {r["run_id"] for r in b.runs}
    assert sorted(rep.files) == ["report.html", "report.json", "report.md"]
    assert all(p.is_file() for p in rep.files.values())

    # Running the file again skips the finished runs.
    again = pvisor.batch.run(_study(tmp_path))
    assert again.result.metadata["batch"]["skipped"] == 2 and again.result.metadata["batch"]["ran"] == 0


def test_batch_errors_raise_before_anything_starts(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[replay]\nno_such_key = 1\n')
    with pytest.raises(pvisor.PvisorError) as e:
        pvisor.batch.run(bad)
    assert (e.value.category, e.value.exit_code) == ("configuration_error", 2)
    assert "no_such_key" in e.value.message


def test_runs_as_dataframe(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas", reason="pandas is optional (pip install pandas)")
    b = pvisor.batch.run(_study(tmp_path))
    df = b.runs.as_dataframe()
    assert isinstance(df, pd.DataFrame) and len(df) == 2
    assert sorted(df["after_step"]) == [1, 3]
    assert set(df["result.phase"]) == {"replayed"}
