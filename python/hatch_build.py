"""Hatchling hooks for the pvisor wheel (used by `make wheel`).

The wheel is not pure Python: it carries the static pvisor binary for one
platform. make wheel passes three environment variables:

PVISOR_WHEEL_VERSION   the version stamped into the binary (pvisor --version)
PVISOR_WHEEL_BINARY    the binary's path, installed as the script `pvisor`
PVISOR_WHEEL_PLATFORM  the platform tag, e.g. manylinux_2_17_x86_64
"""

from __future__ import annotations

import os
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.metadata.plugin.interface import MetadataHookInterface


def _env(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise RuntimeError(f"{name} is not set: build the wheel with `make wheel`")
    return value


class CustomMetadataHook(MetadataHookInterface):
    def update(self, metadata: dict[str, Any]) -> None:
        metadata["version"] = _env("PVISOR_WHEEL_VERSION")


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        binary = os.path.abspath(_env("PVISOR_WHEEL_BINARY"))
        if not os.access(binary, os.X_OK):
            raise RuntimeError(f"PVISOR_WHEEL_BINARY {binary} is not an executable file")
        build_data["pure_python"] = False
        build_data["tag"] = "py3-none-" + _env("PVISOR_WHEEL_PLATFORM")
        build_data["shared_scripts"][binary] = "pvisor"
