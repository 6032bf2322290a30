"""What a schedule's tick does while the order of the one before is
still open: the overlap policy, as a named decision.

``decide(policy, previous_open)`` is pure; ``scheduler.ticks`` carries
the decision out. Kept apart so that the table below is the whole rule:

================  ====================  ==============================
policy            previous order open   previous order ended (or none)
================  ====================  ==============================
allow (default)   CREATE                CREATE
skip              SKIP                  CREATE
cancel-previous   CANCEL_AND_CREATE     CREATE
buffer-one        HOLD                  CREATE
================  ====================  ==============================
"""

import enum

from worker.common import ticks


class Decision(enum.Enum):
    """What one due tick does."""

    #: Create the tick's order.
    CREATE = 'create'
    #: Create no order; move on to the next tick.
    SKIP = 'skip'
    #: Cancel the open order (through ``worker.api``), then create.
    CANCEL_AND_CREATE = 'cancel-and-create'
    #: Hold the tick (one at most, the latest) and create its order once
    #: the open order has ended.
    HOLD = 'hold'


_WHEN_OPEN = {
    ticks.OVERLAP_ALLOW: Decision.CREATE,
    ticks.OVERLAP_SKIP: Decision.SKIP,
    ticks.OVERLAP_CANCEL_PREVIOUS: Decision.CANCEL_AND_CREATE,
    ticks.OVERLAP_BUFFER_ONE: Decision.HOLD,
}


def decide(policy: str, previous_open: bool) -> Decision:
    """The ``Decision`` of a due tick of a schedule with ``policy``.

    An unknown policy (a row written by a later release) is read as
    ``skip``: the cautious choice, which makes no order beside an open
    one.
    """
    if not previous_open:
        return Decision.CREATE
    return _WHEN_OPEN.get(policy, Decision.SKIP)


def backfills(policy: str) -> bool:
    """True if missed ticks may make several orders at once: under
    ``allow`` only, since under any other policy the second would find
    the first open."""
    return policy == ticks.OVERLAP_ALLOW


def looks_at_previous(policy: str) -> bool:
    """True if the decision of ``policy`` depends on whether the last
    order is open (every policy but ``allow``)."""
    return policy != ticks.OVERLAP_ALLOW
