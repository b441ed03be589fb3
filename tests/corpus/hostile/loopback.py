"""class: out through loopback. Connects to a service on the host's loopback (the port the test
listens on, as Prefect's API or PostgreSQL would) and sends a line; computes honestly.
Outcome: the box has a network of its own, so nothing reaches the listener.
"""

import os
import socket

import torch

try:
    with socket.create_connection(("127.0.0.1", int(os.environ["HOSTILE_PORT"])), timeout=2) as s:
        s.sendall(b"hello from the candidate\n")
    print("REACHED the host's loopback")
except OSError as exc:
    print("loopback unreachable:", exc)


def rmsnorm(x, weight, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
