#!/usr/bin/env python3
"""Free loopback ports for the servers the suites start, chosen below the
kernel's ephemeral port range.

Why not the kernel's pick (bind to port 0, read the port, close): that port
comes from the ephemeral range, the range every outgoing connection's local
port comes from too. Between closing the probe and the server binding, a
client connection (the suites open thousands, several suites at once) can
take it, and the server fails with "Address already in use" (a CI run lost
its PerformanceEvaluation step that way). A port below the range is never
given to an outgoing connection, so only another explicit pick can collide,
which a random choice among ~20,000 ports and a bind check make rare.

Run as a script it prints one port (for the shell scripts).
"""
import random
import socket

# The lowest port picked: above the registered services that may run on a
# developer's machine in the low thousands.
LOWEST = 10000
TRIES = 200


def ephemeral_range():
    """The kernel's ephemeral range (Linux), or the IANA default elsewhere."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(part) for part in f.read().split())
            return low, high
    except (OSError, ValueError):
        return 49152, 65535


def bindable(port):
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_port():
    low, _ = ephemeral_range()
    if low - 1 > LOWEST:
        for _ in range(TRIES):
            port = random.randint(LOWEST, low - 1)
            if bindable(port):
                return port
    # No room below the range (a machine configured so): the kernel's pick.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


if __name__ == "__main__":
    print(free_port())
