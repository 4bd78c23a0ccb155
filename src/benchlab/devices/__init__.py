"""Transports that reach a device and run the agent there: local, ssh (Fabric), exec."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchlab.devices.exec import ExecTransport
from benchlab.devices.local import LocalTransport

if TYPE_CHECKING:
    from benchlab.devices.base import Transport
    from benchlab.models import DeviceConfig


def open_transport(device_id: str, config: DeviceConfig) -> Transport:
    """The transport for one device; imported lazily so `local` never pays for Fabric."""
    if config.transport == "ssh":
        # lazy: Fabric, an optional heavy dependency only ssh devices need
        from benchlab.devices.ssh import SshTransport

        return SshTransport(device_id, config)
    if config.transport == "exec":
        return ExecTransport(device_id, config)

    return LocalTransport(device_id, config)
