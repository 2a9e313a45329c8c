"""pvisor.replay through the installed wheel on the bundled Codex session."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

import pvisor


def test_prepare_only(rollout: Path, dirs: Dict[str, Path]) -> None:
    res = pvisor.replay(agent="codex", trajectory=rollout, after_step=3, prepare_only=True, run_id="prep", **dirs)
    assert res.ok and res.exit_code == 0
    assert (res.schema_version, res.phase, res.quality, res.agent_status) == (
        "sandbox-playback.result/v3", "prepared", "verified", "not_started")
    assert (res.run_id, res.after_step, res.replayed_tool_calls, res.prefix_model_turns) == ("prep", 3, 0, 3)
    assert res.agent["type"] == "codex" and res.agent["version"] == "0.171.0"
    assert res.output_dir == dirs["output_dir"] / "prep"
    roles = res.artifacts_by_role()
    assert {"playback_plan", "prepared_native_prefix", "replay_events", "replay_summary"} <= set(roles)
    assert roles["prepared_native_prefix"][0].format == "codex/native-jsonl-0.171.0"
    assert res.artifact("playback_plan") == res.output_dir / "manifest.json"
    assert res.plan()["agent"]["profile"].startswith("codex/")
    # What result.json holds is what was printed.
    assert pvisor.Result.from_file(res.output_dir / "result.json").raw == res.raw
    # Nothing ran, so there is no comparison to load.
    with pytest.raises(pvisor.PvisorError) as e:
        res.observation_comparison()
    assert e.value.category == "configuration_error" and "observation_comparison" in e.value.message
    # Only a resume or fork captures a session bundle to resume.
    with pytest.raises(pvisor.PvisorError) as e:
        res.resume("go on")
    assert e.value.category == "configuration_error" and e.value.result is res


def test_replay_only(rollout: Path, workspace: Path, dirs: Dict[str, Path]) -> None:
    res = pvisor.replay(agent="codex", trajectory=rollout, after_step=3, replay_only=True,
                        workspace=workspace, run_id="ro", **dirs)
    assert (res.phase, res.agent_status) == ("replayed", "not_started")
    calls = [c["call_id"] for s in pvisor.inspect(rollout).steps if (s["ordinal"] or 99) <= 3 for c in s["tool_calls"]]
    assert res.replayed_tool_calls == len(calls) == 5
    cmp = res.observation_comparison()
    assert [c["call_id"] for c in cmp] == calls
    assert all(isinstance(c["exact"], bool) for c in cmp)
    # `ls -A` in the same repository gives the same listing: equal once
    # Codex's chunk id and wall time are masked.
    assert cmp[0]["tool"] == "exec_command" and cmp[0]["normalized_exact"] is True
    assert res.summary()["mode"] == "replay-only"
    assert res.artifact("reconstructed_native_trajectory") is not None
    assert res.artifact("reconstructed_native_trajectory").is_file()


def test_failure_raises_pvisor_error_with_its_category(rollout: Path, dirs: Dict[str, Path]) -> None:
    with pytest.raises(pvisor.PvisorError) as e:
        pvisor.replay(agent="codex", trajectory=rollout, after_step=99, prepare_only=True, **dirs)
    err = e.value
    assert (err.category, err.exit_code) == ("trajectory_error", 10)
    assert "trajectory has 5 complete steps" in err.message
    assert err.result is not None and err.result.failure is not None
    assert err.result.failure.category == "trajectory_error" and err.result.agent_status == "not_started"
    # A bad flag value is a configuration error, still with its result line.
    with pytest.raises(pvisor.PvisorError) as e:
        pvisor.replay(agent="codex", trajectory=rollout, after_step=3, max_steps=0, prepare_only=True, **dirs)
    assert (e.value.category, e.value.exit_code) == ("configuration_error", 2)
    assert e.value.result is not None and e.value.result.schema_version == "sandbox-playback.result/v3"


def _loopback_prefix() -> list:
    """unshare -n (root) or -rn: a new network namespace for the child."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare(1): the continuation runs only in a loopback-only network namespace")
    prefix = [unshare, "-n"] if os.geteuid() == 0 else [unshare, "-rn"]
    probe = subprocess.run([*prefix, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot create a network namespace ({' '.join(prefix)}): {probe.stderr.strip()}")
    return prefix


def _in_loopback_netns(scenario: str, **kwargs: Any) -> Dict[str, Any]:
    """Runs a scenario of _loopback.py in a loopback-only network namespace."""
    child = Path(__file__).with_name("_loopback.py")
    req = json.dumps({"scenario": scenario, "kwargs": kwargs}, default=os.fspath)
    p = subprocess.run([*_loopback_prefix(), sys.executable, str(child)], input=req, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_continue_with_the_recorded_upstream(rollout: Path, workspace: Path, dirs: Dict[str, Path],
                                             codex: Path) -> None:
    out = _in_loopback_netns("replay", agent="codex", trajectory=rollout, after_step=3, upstream="recorded",
                             agent_entrypoint=codex, workspace=workspace, run_id="cont", **dirs)
    assert out["interfaces"] == ["lo"]
    assert out["error"] is None, out["error"]
    res = pvisor.Result(out["results"][0])
    assert (res.phase, res.quality, res.agent_status) == ("continued", "verified", "completed")
    assert res.agent["version"] == "0.171.0" and res.continued_steps >= 1
    nxt = res.next_action_comparison()
    # The recording plays the session's own next action: the agent takes it.
    assert nxt["original"]["tools"] == nxt["replayed"]["tools"]
    assert nxt["original"]["tools"][0]["name"] == "apply_patch"
    assert res.artifact("continued_native_trajectory").is_file()
    assert res.metadata["continuation"]["upstream"]["kind"] == "recorded"
    # Every model request went through the bridge, checked and none refused.
    bridge = res.metadata["continuation"]["bridge"]
    assert bridge["requests"] == bridge["validated"] >= 1 and bridge["refused"] == 0


def test_fork_a_replay_then_resume_the_child(rollout: Path, workspace: Path, dirs: Dict[str, Path], codex: Path,
                                             tmp_path: Path) -> None:
    script = tmp_path / "fake.json"  # pvisor's scripted model: every reply is this text
    script.write_text(json.dumps({"replies": [], "final": "Done. <promise>COMPLETE</promise>"}))
    follow = {"upstream": "fake", "fake_script": script, "agent_entrypoint": codex}
    out = _in_loopback_netns("fork_resume", agent="codex", trajectory=rollout, after_step=3,
                             workspace=workspace, follow_up=follow, **dirs)
    assert out["error"] is None, out["error"]
    replayed, child, resumed = (pvisor.Result(r) for r in out["results"])
    assert replayed.phase == "replayed"
    parent_id = replayed.metadata["native_session_id"]
    # The fork branched at the replay's boundary under a new id; the parent is untouched.
    fork = child.metadata["session"]
    assert (child.phase, child.agent_status, fork["mode"]) == ("continued", "completed", "fork")
    assert fork["prefix"]["after_step"] == 3 and fork["parent"]["unchanged"] is True
    assert fork["session_id"] != parent_id and fork["parent_id"] == parent_id
    assert child.artifact("native_session_bundle").is_dir()
    # The child's resume keeps its id and captures the session again.
    again = resumed.metadata["session"]
    assert (resumed.phase, again["mode"], again["session_id"]) == ("continued", "resume", fork["session_id"])
    assert resumed.artifact("native_session_bundle") != child.artifact("native_session_bundle")
