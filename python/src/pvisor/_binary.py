"""Finding and running the pvisor binary.

The package never reimplements pvisor: every call runs the binary and reads
what it prints. The binary is, in this order:

1. ``$PVISOR_BIN`` when set,
2. the ``pvisor`` script this distribution installed (the wheel's static
   binary, in the environment's ``bin/``),
3. ``pvisor`` on ``PATH``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Mapping, Optional, Sequence

from ._errors import PvisorError, category_for_exit


def binary() -> Path:
    """The pvisor executable this package runs.

    Raises:
        PvisorError: (``configuration_error``) when none is found.
    """
    env = os.environ.get("PVISOR_BIN")
    if env:
        p = Path(env)
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise PvisorError(f"PVISOR_BIN={env} is not an executable file", category="configuration_error", exit_code=2)
        return p
    installed = _installed_script()
    if installed is not None:
        return installed
    found = shutil.which("pvisor")
    if found:
        return Path(found)
    raise PvisorError(
        "no pvisor binary: install the pvisor wheel, put pvisor on PATH or set PVISOR_BIN",
        category="configuration_error",
        exit_code=2,
    )


def _installed_script() -> Optional[Path]:
    """The pvisor script recorded in this distribution's RECORD, if any."""
    try:
        dist = metadata.distribution("pvisor")
    except metadata.PackageNotFoundError:
        return None
    for f in dist.files or ():
        parts = Path(str(f)).parts
        if len(parts) >= 2 and parts[-1] == "pvisor" and parts[-2] in ("bin", "Scripts"):
            p = Path(str(dist.locate_file(f))).resolve()
            if p.is_file() and os.access(p, os.X_OK):
                return p
    return None


@dataclass(frozen=True)
class Completed:
    """One finished run of the binary."""

    args: Sequence[str]
    exit_code: int
    stdout: str
    stderr: str


def run(args: Sequence[str], env: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None) -> Completed:
    """Runs ``pvisor ARGS...`` and returns its exit code and output.

    ``env`` entries are added to this process's environment. A binary that
    cannot be started, or that outlives ``timeout`` seconds, raises
    PvisorError.
    """
    exe = binary()
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    cmd = [str(exe), *args]
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=full_env, timeout=timeout)
    except OSError as e:
        raise PvisorError(f"cannot run {exe}: {e}", category="internal_error", exit_code=50) from e
    except subprocess.TimeoutExpired as e:
        raise PvisorError(f"{exe} {args[0] if args else ''} did not finish within {timeout} s",
                          category="internal_error", exit_code=50) from e
    return Completed(args=cmd, exit_code=p.returncode, stdout=p.stdout, stderr=p.stderr)


def version() -> str:
    """The version the binary prints (``pvisor --version``), e.g. ``0.1.0``."""
    c = run(["--version"])
    out = c.stdout.strip()
    if c.exit_code != 0 or not out.startswith("pvisor "):
        raise PvisorError(f"pvisor --version: exit {c.exit_code}: {out or c.stderr.strip()}",
                          category=category_for_exit(c.exit_code), exit_code=c.exit_code, stderr=c.stderr)
    return out[len("pvisor "):]
