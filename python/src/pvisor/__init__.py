"""pvisor: replay AI coding agents' native sessions in a sandbox, from Python.

This package drives the static ``pvisor`` binary the wheel installs (or
``$PVISOR_BIN``, or ``pvisor`` on PATH) and never reimplements it:

>>> import pvisor
>>> s = pvisor.inspect("rollout.jsonl")                      # doctest: +SKIP
>>> s.steps[0]["tool_calls"][0]["name"]                      # doctest: +SKIP
'exec_command'
>>> r = pvisor.replay(agent="codex", trajectory="rollout.jsonl", after_step=3,
...                   replay_only=True, workspace="repo")    # doctest: +SKIP
>>> r.phase, r.observation_comparison()[0]["exact"]          # doctest: +SKIP

Every failure raises :class:`PvisorError` (``category``, ``exit_code``,
``result``). Batches: :mod:`pvisor.batch`.
"""

from importlib import metadata as _metadata

from . import batch
from ._api import Inspection, fork, inspect, replay, resume
from ._binary import binary, version
from ._errors import PvisorError
from ._result import Artifact, Failure, Result

try:
    __version__ = _metadata.version("pvisor")
except _metadata.PackageNotFoundError:  # running from a source tree
    __version__ = "0+unknown"

__all__ = [
    "Artifact",
    "Failure",
    "Inspection",
    "PvisorError",
    "Result",
    "batch",
    "binary",
    "fork",
    "inspect",
    "replay",
    "resume",
    "version",
]
