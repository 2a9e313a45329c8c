"""Experiment batches: ``pvisor batch run`` and ``pvisor batch report``.

A batch file (TOML) expands into runs; each run's record (``run_id``,
``agent``, ``trajectory``, ``after_step``, ``repeat``, ``exit_code``,
``wall_ms`` and its v3 ``result``) is one dict here, and
:meth:`Runs.as_dataframe` flattens them into a pandas DataFrame when pandas
is installed.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence

from ._api import PathLike, _flags, _run_result
from ._result import Result

__all__ = ["Batch", "Runs", "Report", "run", "runs", "report"]


class Runs(Sequence[Dict[str, Any]]):
    """A list of run dicts (a sequence), with :meth:`as_dataframe`."""

    def __init__(self, items: List[Dict[str, Any]]) -> None:
        self._items = items

    def __getitem__(self, i: Any) -> Any:
        return self._items[i]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        return iter(self._items)

    def __repr__(self) -> str:
        return f"Runs({len(self._items)} runs)"

    def as_dataframe(self) -> Any:
        """A pandas DataFrame, one row per run.

        Nested fields are flattened with dots (``result.phase``,
        ``next_action.tool_names_equal``); the result's ``artifacts`` and
        ``metadata`` are left out (they stay in the dicts).

        Raises:
            ImportError: pandas is not installed.
        """
        pd = importlib.import_module("pandas")  # optional: pip install pandas
        return pd.DataFrame([_flatten(r) for r in self._items])


class Batch:
    """A finished ``pvisor batch run``: its own result line and its runs."""

    def __init__(self, result: Result) -> None:
        self.result = result
        out = result.metadata.get("batch", {}).get("output_dir") or result.output_dir
        self.output_dir = Path(out) if out else None
        self.runs: Runs = runs(self.output_dir) if self.output_dir else Runs([])

    def report(self, out: Optional[PathLike] = None) -> "Report":
        """The report of this batch (:func:`report` of its output dir)."""
        if self.output_dir is None:
            raise ValueError("the batch has no output dir")
        return report(self.output_dir, out=out)

    def __repr__(self) -> str:
        return f"Batch(output_dir={str(self.output_dir)!r}, runs={len(self.runs)})"


class Report:
    """``report.json`` of ``pvisor batch report``: ``runs`` and ``groups``, and the written files."""

    def __init__(self, raw: Dict[str, Any], result: Result) -> None:
        self.raw = raw
        self.result = result
        self.runs = Runs(list(raw.get("runs") or []))
        self.groups: List[Dict[str, Any]] = list(raw.get("groups") or [])
        self.files: Dict[str, Path] = {a.path.name: a.path for a in result.artifacts if a.role == "batch_report"}

    def __repr__(self) -> str:
        return f"Report(runs={len(self.runs)}, groups={len(self.groups)})"


def run(file: PathLike, *, jobs: Optional[int] = None, shard: Optional[str] = None,
        shards: Optional[int] = None, output_dir: Optional[PathLike] = None, dry_run: bool = False,
        events: Optional[PathLike] = None, env: Optional[Dict[str, str]] = None,
        timeout: Optional[float] = None) -> Batch:
    """Runs a batch file (``pvisor batch run FILE``); finished runs are skipped.

    Raises:
        PvisorError: the file is invalid (nothing started), or a run failed
            (``.result`` is the batch's line; :func:`runs` of its
            ``metadata["batch"]["output_dir"]`` lists every run).
    """
    flags = [("jobs", jobs), ("shard", shard), ("shards", shards), ("output-dir", output_dir),
             ("dry-run", dry_run), ("events", events)]
    call = {"command": "batch run", "file": file}
    res = _run_result(["batch", "run", *_flags(flags), "--", os.fspath(file)], call, env=env, timeout=timeout)
    return Batch(res)


def runs(output_dir: PathLike) -> Runs:
    """The run records a batch wrote into ``output_dir`` (``.batch/runs/*.json``), by run id."""
    items = []
    for p in sorted(Path(os.fspath(output_dir), ".batch", "runs").glob("*.json")):
        with open(p, encoding="utf-8") as f:
            items.append(json.load(f))
    return Runs(items)


def report(*dirs: PathLike, out: Optional[PathLike] = None, timeout: Optional[float] = None) -> Report:
    """Builds the report of one or more batch output dirs (``pvisor batch report``).

    Writes ``report.json``, ``report.md`` and ``report.html`` into ``out``
    (default: the first dir) and returns ``report.json``.

    Raises:
        PvisorError: a dir holds no batch, or the report cannot be written.
    """
    if not dirs:
        raise TypeError("report() needs at least one batch output dir")
    args = ["batch", "report", *_flags([("out", out)]), "--", *(os.fspath(d) for d in dirs)]
    res = _run_result(args, {"command": "batch report"}, env=None, timeout=timeout)
    path = Path(os.fspath(out or dirs[0]), "report.json")
    for a in res.artifacts:
        if a.path.name == "report.json":
            path = a.path
    with open(path, encoding="utf-8") as f:
        return Report(json.load(f), res)


def _flatten(d: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    flat: Dict[str, Any] = {}
    for k, v in d.items():
        if k in ("artifacts", "metadata") and prefix == "result.":
            continue
        key = prefix + k
        if isinstance(v, dict):
            flat.update(_flatten(v, key + "."))
        else:
            flat[key] = v
    return flat

