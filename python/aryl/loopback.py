"""Ray on this machine's loopback only: the address every Ray aryl starts binds and is
reached on, and how to keep it there while Ray starts or connects. Shared by the sweeps'
engines (``aryl.studies.sweep_engines``) and the live runtime (``aryl.live``)."""

from __future__ import annotations

import contextlib
import ipaddress
from typing import Any, Dict, Iterator, Optional

#: The address every Ray that aryl starts on this machine binds and is reached on.
LOOPBACK = "127.0.0.1"
#: Ray's settings for a Ray that aryl starts: no metrics exported (the dashboard
#: agent's Prometheus port), as there is no dashboard.
QUIET_RAY: Dict[str, Any] = {"enable_metrics_collection": False}


def is_loopback(address: Optional[str]) -> bool:
    """Whether ``address`` (``host:port``, ``ray://host:port``, ``[::1]:port``) is
    on this machine's loopback."""
    if not address:
        return False
    host = address.partition("://")[2] or address
    host = host.rpartition(":")[0] or host
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@contextlib.contextmanager
def on_loopback() -> Iterator[None]:
    """Keep the loopback address while Ray starts or connects in this process.

    Ray rewrites a loopback address it is given (a node address ``127.0.0.1``, a
    cluster address ``127.0.0.1:port``) to the machine's network address, so that a
    Ray on the loopback could be neither started nor joined, except in its
    single-machine mode (the default on macOS and Windows; ``ENABLE_RAY_CLUSTER``
    false), where this machine's address is the loopback: that mode, meanwhile and in
    this process only. The processes Ray starts take their addresses from their
    command lines, so they stay on the loopback."""
    try:
        from ray._private import ray_constants
    except ImportError:  # not Ray's layout (a stand-in module): nothing to keep
        yield
        return
    before = getattr(ray_constants, "ENABLE_RAY_CLUSTER", True)
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before
