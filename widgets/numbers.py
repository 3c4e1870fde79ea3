"""Numbers written the way the seeds' JavaScript demos write them."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal


def to_fixed(x: float, digits: int) -> str:
    """JavaScript's `x.toFixed(digits)`: the exact binary value rounded, ties away from zero.

    Python's own format rounds ties to even (0.125 -> "0.12", JavaScript "0.13"), and
    JavaScript writes -0 as "0.00"; this matches JavaScript on both.
    """
    x = float(x)
    if x == 0.0:
        x = 0.0  # drops the sign of -0.0
    return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))
