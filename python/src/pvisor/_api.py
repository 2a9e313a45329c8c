"""inspect, replay, resume and fork: the subcommands, as functions.

Each keyword argument is the command-line flag of the same name with ``_``
for ``-`` (``after_step`` is ``--after-step``); a repeatable flag takes a
list, ``prompt_args`` a dict. ``None`` and ``False`` leave a flag out, so
pvisor's own defaults apply. ``env`` adds variables to the binary's
environment (an upstream's API key, say) and ``timeout`` bounds the call
in seconds.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _binary
from ._errors import PvisorError, category_for_exit
from ._result import Result

PathLike = Union[str, "os.PathLike[str]"]
Duration = Union[float, int, str]  # seconds, or a Go duration such as "90s"


@dataclass
class Inspection:
    """What ``pvisor inspect --json`` prints for a session.

    ``steps`` lists every model response in order, as the JSON has them:
    ``ordinal`` (the step number for ``after_step``, None for a text-only
    response), ``complete``, ``native_locator``, ``text`` and ``tool_calls``
    (``call_id``, ``name``, ``arguments``).
    """

    agent: str
    version: str
    session_id: str
    steps: List[Dict[str, Any]]
    raw: Dict[str, Any] = field(repr=False)

    @property
    def step_count(self) -> int:
        """The number of steps (responses with a complete tool batch)."""
        return sum(1 for s in self.steps if s.get("ordinal") is not None)


def inspect(path: PathLike, agent: Optional[str] = None, *, instance: Optional[str] = None,
            timeout: Optional[float] = None) -> Inspection:
    """Lists the steps of a native session file (``pvisor inspect --json``).

    The agent is detected from the file unless ``agent`` is given.

    Raises:
        PvisorError: the file cannot be read or decoded (``trajectory_error``),
            the agent is unknown (``configuration_error``), …
    """
    args = ["inspect", "--json", *_flags([("agent", agent), ("instance", instance)]), "--", os.fspath(path)]
    c = _binary.run(args, timeout=timeout)
    if c.exit_code != 0:
        msg = c.stderr.strip().removeprefix("pvisor inspect: ") or f"exit {c.exit_code}"
        raise PvisorError(msg, category=category_for_exit(c.exit_code), exit_code=c.exit_code, stderr=c.stderr)
    raw = json.loads(c.stdout)
    if "steps" not in raw:
        raise PvisorError(f"{os.fspath(path)} holds several instances; choose one with instance=",
                          category="configuration_error", exit_code=2, stderr=c.stderr)
    return Inspection(agent=raw.get("agent", ""), version=raw.get("version", ""),
                      session_id=raw.get("session_id", ""), steps=list(raw["steps"]), raw=raw)


def replay(*, agent: Optional[str] = None, trajectory: Optional[PathLike] = None,
           after_step: Optional[int] = None, instance: Optional[str] = None, max_steps: Optional[int] = None,
           prepare_only: bool = False, replay_only: bool = False, allow_stale_observations: bool = False,
           boundary_user_prompt: Optional[str] = None, boundary_user_prompt_file: Optional[PathLike] = None,
           prompt_args: Optional[Mapping[str, str]] = None, run_id: Optional[str] = None,
           session_id: Optional[str] = None, workspace: Optional[PathLike] = None,
           state_dir: Optional[PathLike] = None, output_dir: Optional[PathLike] = None,
           agent_entrypoint: Optional[PathLike] = None, agent_runtime: Optional[PathLike] = None,
           agent_args: Optional[Sequence[str]] = None, agent_disallowed_tools: Optional[Sequence[str]] = None,
           allow_untested_version: bool = False, disable_thinking: bool = False, upstream: Optional[str] = None,
           upstream_model: Optional[str] = None, upstream_first_byte_timeout: Optional[Duration] = None,
           upstream_idle_timeout: Optional[Duration] = None, timeout_ms: Optional[int] = None, inherit_env: bool = False,
           pass_env: Optional[Sequence[str]] = None, overlayfs_path: Optional[PathLike] = None,
           overlayfs_compose: Optional[Sequence[PathLike]] = None, overlayfs_commit: Optional[str] = None,
           overlaynet: Optional[str] = None, overlaynet_policy: Optional[str] = None,
           overlaynet_allow: Optional[Sequence[str]] = None, executor: Optional[str] = None,
           policy: Optional[str] = None,
           config: Optional[PathLike] = None, request: Optional[PathLike] = None,
           env: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None) -> Result:
    """Replays a native session after step ``after_step`` (``pvisor replay``).

    ``prepare_only`` plans and runs nothing; ``replay_only`` re-runs the
    prefix's tool calls in ``workspace`` and stops before the agent's first
    model request; otherwise the real agent CLI continues through the bridge
    to ``upstream`` (``"recorded"`` plays the session's own next actions).
    ``config`` (TOML) or ``request`` (JSON) replace every other flag.
    ``upstream_first_byte_timeout`` and ``upstream_idle_timeout`` (seconds
    or Go duration strings) bound a model upstream's silences.
    ``agent_disallowed_tools`` is ``--agent-disallowed-tool`` repeated,
    ``overlaynet_allow`` ``--overlaynet-allow`` (``overlaynet="proxy"``,
    ``overlaynet_policy="allowlist"``: see the README's Egress policy).

    Returns:
        the run's Result.

    Raises:
        PvisorError: the run failed; ``.result`` holds its result.
    """
    kw = dict(locals())
    return _command("replay", kw, ["--quiet"])


def resume(*, agent: str, workspace: PathLike, prompt: Optional[str] = None, prompt_file: Optional[PathLike] = None,
           session: Optional[str] = None, home: Optional[PathLike] = None, bundle: Optional[PathLike] = None,
           prompt_args: Optional[Mapping[str, str]] = None, completion_signals: Optional[Sequence[str]] = None,
           completion_timeout: Optional[Duration] = None, output_tag: Optional[str] = None,
           output_schema: Optional[PathLike] = None, max_retries: Optional[int] = None,
           upstream: Optional[str] = None, upstream_model: Optional[str] = None,
           fake_script: Optional[PathLike] = None, agent_entrypoint: Optional[PathLike] = None,
           agent_args: Optional[Sequence[str]] = None, allow_untested_version: bool = False,
           idle_timeout: Optional[Duration] = None, upstream_first_byte_timeout: Optional[Duration] = None,
           upstream_idle_timeout: Optional[Duration] = None, run_id: Optional[str] = None,
           state_dir: Optional[PathLike] = None, output_dir: Optional[PathLike] = None,
           env: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None) -> Result:
    """Continues a captured session with a new prompt (``pvisor resume``).

    The session is a ``bundle`` (from ``pvisor capture`` or a previous
    resume/fork) or ``session`` (an id) found under ``home``. Durations are
    seconds or Go duration strings. ``completion_signals`` is
    ``--completion-signal`` repeated.

    Raises:
        PvisorError: the run failed; ``.result`` holds its result.
    """
    kw = dict(locals())
    return _command("resume", kw)


def fork(*, agent: str, workspace: PathLike, prompt: Optional[str] = None, prompt_file: Optional[PathLike] = None,
         session: Optional[str] = None, home: Optional[PathLike] = None, bundle: Optional[PathLike] = None,
         trajectory: Optional[PathLike] = None, after_step: Optional[int] = None, prepare_only: bool = False,
         prompt_args: Optional[Mapping[str, str]] = None, completion_signals: Optional[Sequence[str]] = None,
         completion_timeout: Optional[Duration] = None, output_tag: Optional[str] = None,
         output_schema: Optional[PathLike] = None, max_retries: Optional[int] = None,
         upstream: Optional[str] = None, upstream_model: Optional[str] = None,
         fake_script: Optional[PathLike] = None, agent_entrypoint: Optional[PathLike] = None,
         agent_args: Optional[Sequence[str]] = None, allow_untested_version: bool = False,
         idle_timeout: Optional[Duration] = None, upstream_first_byte_timeout: Optional[Duration] = None,
         upstream_idle_timeout: Optional[Duration] = None, run_id: Optional[str] = None,
         state_dir: Optional[PathLike] = None, output_dir: Optional[PathLike] = None,
         env: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None) -> Result:
    """Branches a session into a new one and continues it (``pvisor fork``).

    As :func:`resume`, or from the middle of a native session file:
    ``trajectory`` and ``after_step`` (steps 1..N replayed in ``workspace``,
    or taken as recorded with ``prepare_only``), rebuilt under a new id.

    Raises:
        PvisorError: the run failed; ``.result`` holds its result.
    """
    kw = dict(locals())
    return _command("fork", kw)


# Keyword arguments whose flag is not the name with "-" for "_": the
# repeatable flags are singular.
_FLAG_NAMES = {
    "prompt_args": "prompt-arg",
    "agent_args": "agent-arg",
    "agent_disallowed_tools": "agent-disallowed-tool",
    "overlayfs_compose": "overlayfs-compose",
    "completion_signals": "completion-signal",
}


def _command(command: str, kw: Dict[str, Any], extra: Sequence[str] = ()) -> Result:
    """Runs ``pvisor COMMAND`` with the flags of a function's keyword arguments."""
    call = dict(kw, command=command)
    env, timeout = kw.pop("env"), kw.pop("timeout")
    flags: List[Tuple[str, Any]] = []
    for k, v in kw.items():
        if k in ("completion_timeout", "idle_timeout", "upstream_first_byte_timeout", "upstream_idle_timeout"):
            v = _duration(v)
        flags.append((_FLAG_NAMES.get(k, k.replace("_", "-")), v))
    return _run_result([command, *extra, *_flags(flags)], call, env=env, timeout=timeout)


def _run_result(args: List[str], call: Dict[str, Any], *, env: Optional[Mapping[str, str]],
                timeout: Optional[float]) -> Result:
    c = _binary.run(args, env=env, timeout=timeout)
    res = None
    for line in reversed(c.stdout.splitlines()):
        if line.strip():
            try:
                res = Result.from_line(line, exit_code=c.exit_code, call=call)
            except ValueError:
                res = None
            break
    if res is None:
        tail = c.stderr.strip()[-2000:] or c.stdout.strip()[-2000:]
        raise PvisorError(f"pvisor {args[0]} printed no result line (exit {c.exit_code}): {tail}",
                          category=category_for_exit(c.exit_code), exit_code=c.exit_code or 50, stderr=c.stderr)
    if c.exit_code != 0 or res.failure is not None:
        f = res.failure
        raise PvisorError(f.message if f else f"exit {c.exit_code}",
                          category=f.category if f else category_for_exit(c.exit_code),
                          exit_code=c.exit_code, result=res, stderr=c.stderr)
    return res


def _flags(pairs: Sequence[Tuple[str, Any]]) -> List[str]:
    """``--name=value`` arguments; None/False omitted, lists repeated, dicts as KEY=VALUE."""
    out: List[str] = []
    for name, v in pairs:
        if v is None or v is False:
            continue
        if v is True:
            out.append(f"--{name}")
        elif isinstance(v, Mapping):
            out += [f"--{name}={k}={val}" for k, val in v.items()]
        elif isinstance(v, (list, tuple)):
            out += [f"--{name}={os.fspath(e) if isinstance(e, os.PathLike) else e}" for e in v]
        elif isinstance(v, os.PathLike):
            out.append(f"--{name}={os.fspath(v)}")
        else:
            out.append(f"--{name}={v}")
    return out


def _duration(v: Optional[Duration]) -> Optional[str]:
    if v is None or isinstance(v, str):
        return v
    return f"{float(v)}s"

