"""What a step sees and what it answers.

Order types' steps and certificate plugins are pure: they take an
immutable view of the order and return one of the result values below.
They never touch the database, RPC or global configuration; the worker
turns their answer into the step's and the order's state change and
retry rows, in one transaction. The one thing a step may ask while it
runs is a longer lease (``OrderView.extend_lease``), which the worker
writes for it.
"""

import abc
import dataclasses
import types
import typing
import uuid

# The namespace of idempotency keys: uuid5(namespace, "order/step").
_KEYS = uuid.UUID('5f0c1d2e-8a7b-4c3d-9e6f-0a1b2c3d4e5f')


#: The longest lease one extension may ask for: that of the longest
#: ``timeout_seconds`` a step may be given (``[step:TYPE.STEP]``).
MAX_LEASE_SECONDS = 604800.0


class LeaseLost(Exception):
    """The run no longer holds its step: it was taken back (its lease
    ended and its grace passed, or its worker was judged dead), or its
    order was cancelled. Whatever the run returns is discarded; a step
    that gets this should stop its work."""


def idempotency_key(order_id: str, step: str) -> str:
    """The stable idempotency key of one step of one order.

    A UUID derived from the order's id and the step's name: the same for
    every run of that step, different between steps and orders.
    """
    return str(uuid.uuid5(_KEYS, '%s/%s' % (order_id, step)))


@dataclasses.dataclass(frozen=True)
class Signal:
    """A signal sent to the order (``OrderAPI.signal``) that no step has
    consumed yet, as a step sees it.

    :param signal_id: the sender's key of the signal (or a generated
        one): the same for every run that sees it.
    :param payload: the JSON value sent with it, or None.
    """

    signal_id: str
    name: str
    payload: typing.Any = None


@dataclasses.dataclass(frozen=True)
class OrderView:
    """The read-only facts about an order that a step may use.

    :param meta: the order's metadata, with the outputs of its DONE steps
        merged in (in declaration order).
    :param attempt: how many runs of this step failed in a row before
        (0 on the first try).
    :param token: the fencing token this run holds; it changes on every
        run, so it is *not* an idempotency key.
    :param polls: how many times this step asked to be polled again.
    :param step: the step being run.
    :param idempotency_key: the same for every run of this step of this
        order (after a crash, a takeover, a lease expiry, a retry) and
        different between steps and orders: send it to the remote service
        so that it does a repeated request once.
    :param steps: ``{name: status}`` of every step of the order (what a
        compensation step reads to know what to undo).
    :param lease_extender: the worker's, behind ``extend_lease``; None
        in a view that holds no lease (one built by a test).
    :param signals: the signals sent to the order that the step declares
        (``Step.signals``) and no step consumed yet, oldest first. The
        run that completes the step consumes those it saw; a run that
        polls, waits or fails sees them again next time.
    """

    id: str
    type: str
    meta: types.MappingProxyType[str, typing.Any]
    attempt: int = 0
    token: int = 0
    polls: int = 0
    step: str = ''
    idempotency_key: str = ''
    steps: types.MappingProxyType[str, str] = dataclasses.field(
        default_factory=lambda: types.MappingProxyType({}))
    lease_extender: typing.Callable[[float], None] | None = \
        dataclasses.field(default=None, repr=False, compare=False)
    signals: tuple[Signal, ...] = ()

    def signal(self, name: str) -> Signal | None:
        """The oldest signal ``name`` the step has not consumed, or None.
        """
        for found in self.signals:
            if found.name == name:
                return found
        return None

    def extend_lease(self, seconds: float) -> None:
        """Hold this run's lease until ``seconds`` from now.

        A step's lease (its policy's ``timeout_seconds``) is how long the
        retry daemon lets it run before it takes the step back as hung.
        A step that works for long can keep a short lease and extend it
        as it makes progress, so that a real hang is found soon: call
        this well before the lease ends, say at each third of it.

        :param seconds: the new lease, from now (it may shorten one),
            more than 0 and at most ``MAX_LEASE_SECONDS``.
        :raises LeaseLost: the run no longer holds the step (fenced by
            its token): it must stop, its result will be discarded.
        :raises ValueError: ``seconds`` is out of range.
        """
        if isinstance(seconds, bool) or \
                not isinstance(seconds, (int, float)) or \
                not 0 < seconds <= MAX_LEASE_SECONDS:
            raise ValueError('a lease is more than 0 and at most %g '
                             'seconds, not %r'
                             % (MAX_LEASE_SECONDS, seconds))
        if self.lease_extender is None:
            raise LeaseLost('this view of order %s holds no lease'
                            % self.id)
        self.lease_extender(float(seconds))

    def idempotency_key_of(self, step: str) -> str:
        """The idempotency key of another step of this order.

        For a compensation step that asks the remote side what a step
        interrupted by the cancellation did.
        """
        return idempotency_key(self.id, step)


@dataclasses.dataclass(frozen=True)
class Completed:
    """The step is done; ``meta`` is its output.

    The output is given to the steps after it, and merged into the
    order's metadata when the order turns ACTIVE.

    :param then_after_seconds: start the steps that this one makes ready
        only after this delay (a remote side that needs time, such as a
        certificate authority before the first status check).
    """

    meta: dict[str, typing.Any] = dataclasses.field(default_factory=dict)
    then_after_seconds: float = 0.0


@dataclasses.dataclass(frozen=True)
class Failed:
    """The step cannot succeed: the order goes to ERROR with ``reason``."""

    reason: str


@dataclasses.dataclass(frozen=True)
class RetryLater:
    """Not done yet: poll this step again after ``delay_seconds``.

    This is the blueprint's R-1: a long workflow polls its remote side,
    up to the step policy's ``max_polls``. ``method`` is for certificate
    plugins, whose ``issue_certificate_request`` names the status check
    that follows; an order type's step leaves it None.
    """

    delay_seconds: float
    method: str | None = None


@dataclasses.dataclass(frozen=True)
class RemoteUnavailable:
    """The remote service is down; retry the same step later (R-2).

    The step's policy chooses the delay (back-off with jitter) and fails
    the order once the step has failed too many times.

    :param retry_after_seconds: the delay the remote side asked for (a
        Retry-After header); used instead of the back-off, capped by the
        policy's ``backoff_max_seconds``.
    """

    reason: str
    retry_after_seconds: float | None = None


@dataclasses.dataclass(frozen=True)
class WaitForSignal:
    """Not done yet: run this step again when the signal ``name`` is sent
    to the order, or after ``timeout_seconds`` if none is.

    Decided as a poll (``RetryLater(timeout_seconds)``): counted against
    the policy's ``max_polls`` and ``deadline_seconds``, and the run
    after the timeout decides what to do without the signal (poll the
    remote side, wait again, fail). The step must declare the name
    (``Step(signals=...)``); a signal that arrives while it waits runs it
    at once.
    """

    name: str
    timeout_seconds: float


#: What a plugin's step returns.
Result = Completed | Failed | RetryLater | RemoteUnavailable | WaitForSignal


class CertificatePluginBase(abc.ABC):
    """A certificate authority back-end.

    Subclasses name the option group whose values they receive as keyword
    arguments (``option_group`` and ``option_names``), so that they never
    read global configuration themselves.
    """

    option_group: str | None = None
    option_names: tuple[str, ...] = ()

    @abc.abstractmethod
    def issue_certificate_request(self, order: OrderView) -> Result:
        """Start issuing the certificate of ``order`` (an ``OrderView``)."""

    @abc.abstractmethod
    def check_certificate_status(self, order: OrderView) -> Result:
        """Check whether the certificate of ``order`` has been issued."""
