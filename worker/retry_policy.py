"""Back-off after a remote service was unavailable (R-2)."""

import random

from worker.common import randomness


def backoff_seconds(attempt: int, base: float, cap: float,
                    rng: randomness.Uniform = random) -> float:
    """Return the delay before retry number ``attempt`` (1, 2, …).

    Exponential with "equal jitter": half of ``base * 2**(attempt-1)``
    (capped at ``cap``) is kept, the other half is random, so the delay
    grows with every attempt while concurrent retries spread out.
    """
    ceiling: float = min(cap, base * 2 ** (attempt - 1))
    return ceiling / 2 + rng.uniform(0, ceiling / 2)
