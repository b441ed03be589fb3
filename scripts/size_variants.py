"""What an input format proposes as other sizes (scripts/sizes.py probes them).

Apart from the probe because the formats build these and the probe imports the formats: one
module holding both tied scripts.formats and scripts.sizes into an import circle.
"""

from __future__ import annotations

from pydantic import BaseModel

from kernel_bakeoff.scripts.spec import Workload


class Variant(BaseModel):
    """A size a format proposes: the untimed workload and how many bytes its inputs take."""

    workload: Workload
    input_bytes: int | None = None  # None: not known before making them
    larger: bool = False  # larger than the listed size it was derived from


def targets(n: int) -> list[tuple[str, int]]:
    """Other values for a dimension of size n: halved, doubled and made odd (n - 1 when n is
    even, n + 2 when n is odd already), those that are >= 1, differ from n and from each other."""
    odd = n - 1 if n % 2 == 0 else n + 2
    found: list[tuple[str, int]] = []
    for label, m in (("halved", n // 2), ("doubled", 2 * n), ("odd", odd)):
        if m >= 1 and m != n and m not in [v for _, v in found]:
            found.append((label, m))
    return found
