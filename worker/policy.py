"""A step's retry policy and the decisions it makes.

An order type declares a ``StepPolicy`` for each of its steps; operators
override any field in the configuration (``worker.conf.order_types``).
The decisions are pure: given the policy, the step's counters and the
time, they return a named value, and the worker turns it into the step's
new state.
"""

import dataclasses
import datetime
import random
import typing

from worker.common import randomness

EXPONENTIAL = 'exponential'
LINEAR = 'linear'
CONSTANT = 'constant'
BACKOFFS = (EXPONENTIAL, LINEAR, CONSTANT)

#: In ``retry_on``: every unexpected exception retries.
ANY_EXCEPTION = '*'

# The greatest exponent of two that a float holds (2.0 ** 1024 overflows):
# an exponential delay past it is past any cap.
_MAX_DOUBLINGS = 1023


@dataclasses.dataclass(frozen=True)
class StepPolicy:
    """How one step is retried, timed out and given up.

    :param retry_on: names of the exception classes (``ValueError``, or
        ``package.module.Error``) that a run may raise and be retried;
        ``('*',)`` retries every unexpected exception. Others fail the
        order at once. A ``RemoteUnavailable`` result always retries.
    :param never_retry: exception class names that never retry, even if
        ``retry_on`` matches them.
    :param backoff: ``exponential``, ``linear`` or ``constant``.
    :param backoff_base_seconds: the first delay (and the step of
        ``linear``).
    :param backoff_max_seconds: the cap of one delay, also of a delay the
        step asks for itself (``RemoteUnavailable.retry_after_seconds``).
    :param jitter: keep half of each delay and draw the other half at
        random, so that retries of many orders spread out.
    :param max_attempts: runs of the step that may fail (a failure, a lost
        lease) before the order goes to ERROR.
    :param timeout_seconds: the lease of one run: a run still going after
        this long loses its claim and is retried.
    :param deadline_seconds: the step gives up once this long has passed
        since its first run; 0 for no deadline.
    :param max_polls: how many times the step may ask to be polled again
        (``RetryLater``) before the order goes to ERROR; 0 for no limit.
    :param max_running: how many runs of this step (of every order of its
        type) may go on at once, across every worker and host; 0 for no
        bound (``worker.steps.flow``).
    """

    retry_on: tuple[str, ...] = ()
    never_retry: tuple[str, ...] = ()
    backoff: str = EXPONENTIAL
    backoff_base_seconds: float = 2.0
    backoff_max_seconds: float = 600.0
    jitter: bool = True
    max_attempts: int = 11
    timeout_seconds: float = 600.0
    deadline_seconds: float = 0.0
    max_polls: int = 10000
    max_running: int = 0

    def __post_init__(self) -> None:
        for name in ('retry_on', 'never_retry'):
            if isinstance(getattr(self, name), str):
                raise ValueError('%s must be a tuple of exception class '
                                 'names, not a string' % name)
        for name in ('backoff_base_seconds', 'backoff_max_seconds',
                     'deadline_seconds', 'max_polls', 'max_running'):
            if getattr(self, name) < 0:
                raise ValueError('%s must not be negative' % name)
        if self.backoff not in BACKOFFS:
            raise ValueError('backoff must be one of %s, not %r'
                             % (', '.join(BACKOFFS), self.backoff))
        if self.max_attempts < 1:
            raise ValueError('max_attempts must be at least 1')
        if self.timeout_seconds <= 0:
            raise ValueError('timeout_seconds must be positive')


#: The fields an operator may override, in declaration order.
FIELDS = tuple(field.name for field in dataclasses.fields(StepPolicy))


@dataclasses.dataclass(frozen=True)
class Retry:
    """Run the step again after ``delay_seconds``."""

    delay_seconds: float


@dataclasses.dataclass(frozen=True)
class GiveUp:
    """Stop retrying: the order goes to ERROR with ``reason``."""

    reason: str


Decision = Retry | GiveUp


def backoff_seconds(policy: StepPolicy, failure: int,
                    rng: randomness.Uniform = random) -> float:
    """Return the delay before the retry after failure number ``failure``.

    With ``jitter``, "equal jitter": half of the delay is kept, the other
    half is random, so the delay grows with every failure while
    concurrent retries spread out.
    """
    base = policy.backoff_base_seconds
    if policy.backoff == EXPONENTIAL:
        # A float power, its exponent bounded: ``2 ** (failure - 1)`` is
        # an integer that no float holds from the 1,025th failure on
        # (OverflowError), and costs time to compute far beyond it.
        delay = base * 2.0 ** min(failure - 1, _MAX_DOUBLINGS)
    elif policy.backoff == LINEAR:
        delay = base * failure
    else:
        delay = base
    ceiling: float = min(policy.backoff_max_seconds, delay)
    if not policy.jitter:
        return ceiling
    return ceiling / 2 + rng.uniform(0, ceiling / 2)


def retries(policy: StepPolicy, exception_names: typing.Iterable[str]) -> bool:
    """True if an exception of these class names may be retried.

    :param exception_names: the qualified and short names of the
        exception's class and of its bases.
    """
    names = set(exception_names)
    if names & set(policy.never_retry):
        return False
    return ANY_EXCEPTION in policy.retry_on or bool(
        names & set(policy.retry_on))


def after_failure(policy: StepPolicy, failures: int, started_at:
                  datetime.datetime | None, now: datetime.datetime,
                  what: str, asked_delay: float | None = None,
                  rng: randomness.Uniform = random) -> Decision:
    """Decide what follows a failed run, the ``failures``-th in a row.

    :param what: the failure, for the reason of a ``GiveUp``.
    :param asked_delay: a delay the step asked for (as a server's
        Retry-After); it replaces the back-off, capped by
        ``backoff_max_seconds``.
    """
    if failures >= policy.max_attempts:
        return GiveUp('gave up after %d attempts; last error: %s'
                      % (failures, what))
    if asked_delay is not None:
        delay = min(max(0.0, asked_delay), policy.backoff_max_seconds)
    else:
        delay = backoff_seconds(policy, failures, rng)
    if past_deadline(policy, started_at,
                     now + datetime.timedelta(seconds=delay)):
        return GiveUp('reached its deadline of %gs after %d attempts; '
                      'last error: %s' % (policy.deadline_seconds, failures,
                                          what))
    return Retry(delay)


def after_poll(policy: StepPolicy, polls: int, started_at:
               datetime.datetime | None, now: datetime.datetime,
               delay: float) -> Decision:
    """Decide whether the step may be polled again (its ``polls``-th)."""
    if policy.max_polls and polls > policy.max_polls:
        return GiveUp('still not done after %d polls (max_polls)'
                      % policy.max_polls)
    if past_deadline(policy, started_at,
                     now + datetime.timedelta(seconds=delay)):
        return GiveUp('still not done at its deadline of %gs'
                      % policy.deadline_seconds)
    return Retry(delay)


def past_deadline(policy: StepPolicy, started_at: datetime.datetime | None,
                  moment: datetime.datetime) -> bool:
    """True if the step's deadline comes before ``moment``."""
    if not policy.deadline_seconds or started_at is None:
        return False
    deadline = started_at + datetime.timedelta(
        seconds=policy.deadline_seconds)
    return moment > deadline
