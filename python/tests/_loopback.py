"""Runs a pvisor call in a new network namespace whose only interface is lo.

Used as ``unshare -n python _loopback.py`` (or ``unshare -rn`` without
root): reads {"scenario": ..., "kwargs": {...}} on stdin, brings lo up,
checks that no other interface exists, runs the scenario (pvisor calls
through the installed package) and prints {"results": [v3 results],
"error": {...} or null, "interfaces": [...]}.
"""

from __future__ import annotations

import fcntl
import json
import socket
import struct
import sys
from typing import Any, Dict, List

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
IFREQ = "16sH22x"  # struct ifreq: name, flags, the rest of the union


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        got = fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, struct.pack(IFREQ, b"lo", 0))
        flags = struct.unpack(IFREQ, got)[1]
        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack(IFREQ, b"lo", flags | IFF_UP))
    names = [name for _, name in socket.if_nameindex()]
    if names != ["lo"]:
        raise SystemExit(f"not a loopback-only network namespace: interfaces {names}")


def replay(pvisor: Any, kw: Dict[str, Any]) -> List[Any]:
    """One pvisor.replay call."""
    return [pvisor.replay(**kw)]


def fork_resume(pvisor: Any, kw: Dict[str, Any]) -> List[Any]:
    """replay_only, then Result.fork(prompt), then the child's Result.resume(prompt)."""
    follow = kw.pop("follow_up")
    replayed = pvisor.replay(replay_only=True, **kw)
    child = replayed.fork("Fork here and say done.", **follow)
    return [replayed, child, child.resume("Resume and say done again.")]


SCENARIOS = {"replay": replay, "fork_resume": fork_resume}


def main() -> None:
    req = json.load(sys.stdin)
    loopback_up()
    import pvisor

    out: Dict[str, Any] = {"results": [], "error": None, "interfaces": [n for _, n in socket.if_nameindex()]}
    try:
        out["results"] = [r.raw for r in SCENARIOS[req["scenario"]](pvisor, req["kwargs"])]
    except pvisor.PvisorError as e:
        out["error"] = {"category": e.category, "exit_code": e.exit_code, "message": e.message, "stderr": e.stderr}
        out["results"] = [e.result.raw] if e.result else []
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
