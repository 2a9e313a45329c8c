"""Result: one ``sandbox-playback.result/v3`` line, as pvisor printed it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from ._errors import PvisorError

SCHEMA_VERSION = "sandbox-playback.result/v3"


@dataclass(frozen=True)
class Artifact:
    """One output file of a run: its role, format and absolute path."""

    role: str
    format: str
    path: Path


@dataclass(frozen=True)
class Failure:
    """Why a run failed: ``category`` (see PvisorError) and a message."""

    category: str
    message: str


class Result:
    """A ``sandbox-playback.result/v3`` result.

    The v3 fields are attributes (``phase``, ``quality``, ``agent_status``,
    ``run_id``, ``agent``, ``after_step``, ``replayed_tool_calls``,
    ``prefix_model_turns``, ``continued_steps``, ``state_dir``,
    ``output_dir``, ``artifacts``, ``failure``, ``retryable``, ``metadata``);
    ``raw`` is the whole decoded line. Artifacts are found by role
    (:meth:`artifact`, :meth:`artifacts_by_role`) and the JSON ones loaded with
    :meth:`load` or the named helpers.
    """

    def __init__(self, raw: Mapping[str, Any], *, exit_code: int = 0,
                 call: Optional[Mapping[str, Any]] = None) -> None:
        self.raw: Dict[str, Any] = dict(raw)
        self.exit_code = exit_code
        # The call that produced it ("command" and its keyword arguments),
        # so resume() and fork() can start from it.
        self._call: Dict[str, Any] = dict(call or {})
        r = self.raw
        self.schema_version: str = r.get("schema_version", "")
        self.phase: Optional[str] = r.get("phase")
        self.quality: Optional[str] = r.get("quality")
        self.agent_status: Optional[str] = r.get("agent_status")
        self.run_id: Optional[str] = r.get("run_id")
        self.agent: Dict[str, Any] = dict(r.get("agent") or {})
        self.after_step: Optional[int] = r.get("after_step")
        self.replayed_tool_calls: int = r.get("replayed_tool_calls") or 0
        self.prefix_model_turns: int = r.get("prefix_model_turns") or 0
        self.continued_steps: int = r.get("continued_steps") or 0
        self.state_dir: Optional[Path] = Path(r["state_dir"]) if r.get("state_dir") else None
        self.output_dir: Optional[Path] = Path(r["output_dir"]) if r.get("output_dir") else None
        self.artifacts: List[Artifact] = [
            Artifact(role=a.get("role", ""), format=a.get("format", ""), path=Path(a.get("path", "")))
            for a in r.get("artifacts") or []
        ]
        f = r.get("failure")
        self.failure: Optional[Failure] = Failure(f.get("category", ""), f.get("message", "")) if f else None
        self.retryable: bool = bool(r.get("retryable"))
        self.metadata: Dict[str, Any] = dict(r.get("metadata") or {})

    @classmethod
    def from_line(cls, line: str, *, exit_code: int = 0, call: Optional[Mapping[str, Any]] = None) -> "Result":
        """Decodes one result line (raises ValueError when it is not a v3 result)."""
        raw = json.loads(line)
        if not isinstance(raw, dict) or raw.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(f"not a {SCHEMA_VERSION} line: {line[:200]!r}")
        return cls(raw, exit_code=exit_code, call=call)

    @classmethod
    def from_file(cls, path: "str | Path") -> "Result":
        """Reads a run's ``result.json``."""
        return cls.from_line(Path(path).read_text(encoding="utf-8"))

    @property
    def ok(self) -> bool:
        """True when the run did not fail."""
        return self.failure is None

    @property
    def agent_type(self) -> str:
        """The agent, as pvisor names it (``agent.type``)."""
        return str(self.agent.get("type") or self._call.get("agent") or "")

    def artifacts_by_role(self) -> Dict[str, List[Artifact]]:
        """Every artifact, grouped by role."""
        out: Dict[str, List[Artifact]] = {}
        for a in self.artifacts:
            out.setdefault(a.role, []).append(a)
        return out

    def artifact(self, role: str) -> Optional[Path]:
        """The path of the first artifact with this role, or None."""
        for a in self.artifacts:
            if a.role == role:
                return a.path
        return None

    def load(self, role: str) -> Any:
        """Loads the JSON artifact with this role.

        Raises:
            PvisorError: (``configuration_error``) when the run has none.
        """
        p = self.artifact(role)
        if p is None:
            have = ", ".join(sorted(self.artifacts_by_role())) or "none"
            raise PvisorError(f"run {self.run_id} has no {role} artifact (it has: {have})",
                              category="configuration_error", exit_code=2, result=self)
        with open(p, encoding="utf-8") as f:
            return json.load(f)

    def observation_comparison(self) -> Any:
        """``observation-comparison.json``: per replayed call, exact or not, and the diff."""
        return self.load("observation_comparison")

    def next_action_comparison(self) -> Any:
        """``next-action-comparison.json``: the continued agent's next action against the recorded one."""
        return self.load("next_action_comparison")

    def summary(self) -> Any:
        """``replay-summary.json`` (every mode)."""
        return self.load("replay_summary")

    def plan(self) -> Any:
        """``manifest.json``, the playback plan."""
        return self.load("playback_plan")

    def resume(self, prompt: str, **kwargs: Any) -> "Result":
        """Continues this run's session with ``prompt`` (``pvisor resume``).

        Needs the session bundle a resume or fork captured
        (``native_session_bundle``). The agent, workspace, upstream and
        directories of the call that produced this result are reused unless
        given in ``kwargs`` (any keyword of :func:`pvisor.resume`).
        """
        from . import _api

        bundle = self.artifact("native_session_bundle")
        if bundle is None:
            raise PvisorError(
                f"run {self.run_id} has no session bundle to resume (only resume and fork capture one); "
                "branch a replay with Result.fork(prompt) or pvisor.fork(trajectory=..., after_step=...)",
                category="configuration_error", exit_code=2, result=self)
        return _api.resume(**self._follow_up(prompt, kwargs, bundle=bundle))

    def fork(self, prompt: str, **kwargs: Any) -> "Result":
        """Branches this run's session into a new one and continues it with ``prompt``.

        From a resume or fork: ``pvisor fork --bundle`` of the captured
        session. From a replay: ``pvisor fork --trajectory T --after-step N``
        with the replay's trajectory and boundary (steps 1..N replayed in the
        workspace, rebuilt under a new id). ``kwargs`` as for :func:`pvisor.fork`.
        """
        from . import _api

        bundle = self.artifact("native_session_bundle")
        if bundle is not None:
            return _api.fork(**self._follow_up(prompt, kwargs, bundle=bundle))
        if self._call.get("command") == "replay" and self._call.get("trajectory") and self.after_step:
            kw = self._follow_up(prompt, kwargs, trajectory=self._call["trajectory"], after_step=self.after_step)
            if kw.get("upstream") == "recorded" and "upstream" not in kwargs:
                del kw["upstream"]  # the recording has no reply for a new prompt
            return _api.fork(**kw)
        raise PvisorError(f"run {self.run_id} has neither a session bundle nor a replayed boundary to fork from",
                          category="configuration_error", exit_code=2, result=self)

    # Keywords a follow-up resume or fork takes over from the call before.
    _INHERITED = ("workspace", "upstream", "upstream_model", "fake_script", "agent_entrypoint", "agent_args",
                  "allow_untested_version", "state_dir", "output_dir", "env")

    def _follow_up(self, prompt: str, kwargs: Mapping[str, Any], **source: Any) -> Dict[str, Any]:
        kw: Dict[str, Any] = {k: self._call[k] for k in self._INHERITED if self._call.get(k) is not None}
        kw["agent"] = self.agent_type
        kw.update(source)
        kw["prompt"] = prompt
        kw.update(kwargs)
        return kw

    def __repr__(self) -> str:
        fail = f", failure={self.failure.category!r}" if self.failure else ""
        return (f"Result(run_id={self.run_id!r}, phase={self.phase!r}, quality={self.quality!r}, "
                f"agent_status={self.agent_status!r}{fail})")
