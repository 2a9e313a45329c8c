"""Runs a pvisor call in a new network namespace whose only interface is lo.

Used as ``unshare -n python _loopback.py`` (or ``unshare -rn`` without
root): reads {"function": ..., "kwargs": {...}} on stdin, brings lo up,
checks that no other interface exists, calls pvisor.<function>(**kwargs)
and prints {"result": <v3 result or null>, "error": {...} or null}.
"""

from __future__ import annotations

import fcntl
import json
import socket
import struct
import sys

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


def main() -> None:
    req = json.load(sys.stdin)
    loopback_up()
    import pvisor

    out: dict = {"result": None, "error": None, "interfaces": [n for _, n in socket.if_nameindex()]}
    try:
        res = getattr(pvisor, req["function"])(**req["kwargs"])
        out["result"] = res.raw
    except pvisor.PvisorError as e:
        out["error"] = {"category": e.category, "exit_code": e.exit_code, "message": e.message, "stderr": e.stderr}
        out["result"] = e.result.raw if e.result else None
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
