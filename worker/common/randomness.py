"""The source of randomness that jitter takes, for both sides.

Back-off (``worker.policy``) and the daemons' slots
(``scheduler.slots``) take one as a parameter, so tests pass a seeded
``random.Random``.
"""

import typing


class Uniform(typing.Protocol):
    """A source of randomness: the ``random`` module or a ``Random``."""

    def uniform(self, a: float, b: float) -> float:
        """A random number between ``a`` and ``b``."""
        ...
