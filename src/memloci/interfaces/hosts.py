"""Host names and addresses (layer: interfaces): which are this machine only.

Kept free of web-framework imports so the CLI can use it without loading the server.
"""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or address, brackets allowed) is this machine only."""
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
