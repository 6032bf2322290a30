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

import math
import random


def delay_to_slot(now, period, rank, count, jitter, rng=random):
    """Return the seconds from ``now`` to this daemon's next pass.

    :param now: the time, as seconds since the epoch.
    :param period: ``[scheduler] schedule_period_seconds``.
    :param rank: this daemon's place (0-based) among ``count`` live ones.
    :param jitter: ``[scheduler] schedule_jitter``: the pass is moved by a
        random amount of up to ``jitter / 2`` of a slot, earlier or later.
    """
    slot = period / count
    offset = (rank % count) * slot
    # The start of our next slot, at least half a slot away: a pass that
    # ran a little before its slot (the dither) must not run again in it.
    cycles = math.floor((now + slot / 2 - offset) / period) + 1
    start = offset + cycles * period
    dither = rng.uniform(-jitter, jitter) * slot / 2
    return max(0.0, start + dither - now)


def rank_of(name, live_names):
    """Return ``(rank, count)`` of ``name`` among the live daemons.

    A daemon not (or no longer) among them, whose heartbeat has not been
    written yet or was removed during an outage, takes the place after the
    others.
    """
    names = sorted(set(live_names) | {name})
    return names.index(name), len(names)
