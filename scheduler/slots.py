"""When each barbican-retry daemon passes: one slot of the period each.

Independent timers, however jittered, drift into one another: two daemons
started together pass at nearly the same moments, and the second finds the
lock taken or nothing left, so rows wait up to a whole period. Instead the
period is cut into one slot per live daemon (ranked by service name, from
the heartbeats), and each passes at the start of its own slot, so that with
K daemons a pass comes every period / K. The slots are laid on the wall
clock, which every host keeps with NTP already (heartbeats and lock ages
rely on it too); when a daemon starts or dies the others take their new
ranks at their next pass.
"""

import collections.abc
import math
import random

from worker.common import randomness


def delay_to_slot(now: float, period: float, rank: int, count: int,
                  jitter: float, rng: randomness.Uniform = random,
                  elapsed: float = 0.0) -> float:
    """Return the seconds to this daemon's next pass.

    :param now: the start of the pass that just ran (or the present, when
        none did), as seconds since the epoch.
    :param period: ``[scheduler] schedule_period_seconds``.
    :param rank: this daemon's place (0-based) among ``count`` live ones.
    :param jitter: ``[scheduler] schedule_jitter``: the pass is moved by a
        random amount of up to ``jitter / 2`` of a slot, earlier or later.
    :param elapsed: seconds since ``now`` (how long the pass ran): a long
        pass keeps the slot after the one it started in, or passes at once
        if it ran past it.
    """
    slot = period / count
    offset = (rank % count) * slot
    # The start of our next slot, at least half a slot away: a pass that
    # ran a little before its slot (the dither) must not run again in it.
    cycles = math.floor((now + slot / 2 - offset) / period) + 1
    start = offset + cycles * period
    dither = rng.uniform(-jitter, jitter) * slot / 2
    return max(0.0, start + dither - now - elapsed)


def rank_of(name: str,
            live_names: collections.abc.Collection[str]) -> tuple[int, int]:
    """Return ``(rank, count)`` of ``name`` among the live daemons.

    A daemon not (or no longer) among them, whose heartbeat has not been
    written yet or was removed during an outage, takes the place after the
    others, so that it does not share a slot with one of them.
    """
    names = sorted(set(live_names) - {name})
    if name in live_names:
        names = sorted(names + [name])
    else:
        names.append(name)
    return names.index(name), len(names)
