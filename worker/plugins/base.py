"""What a plugin sees and what it answers.

Plugins are pure: they take an immutable view of the order and return one
of the result values below. They never touch the database, RPC or global
configuration; the worker's manager turns their answer into the order's
state change and retry rows, in one transaction.
"""

import abc
import dataclasses
import types
import typing


@dataclasses.dataclass(frozen=True)
class OrderView:
    """The read-only facts about an order that a plugin may use.

    :param attempt: how many times in a row this step found the remote
        service unavailable before (0 on the first try).
    :param token: the fencing token this step runs under; unique per step
        run, so a plugin may use it as an idempotency key with its remote
        service.
    """

    id: str
    type: str
    meta: types.MappingProxyType[str, typing.Any]
    attempt: int = 0
    token: int = 0


@dataclasses.dataclass(frozen=True)
class Completed:
    """The order is done; ``meta`` is merged into the order's metadata."""

    meta: dict[str, typing.Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Failed:
    """The order cannot succeed; it goes to ERROR with ``reason``."""

    reason: str


@dataclasses.dataclass(frozen=True)
class RetryLater:
    """Run ``method`` (a step name) again after ``delay_seconds``.

    This is the blueprint's R-1: a long workflow polls its remote side.
    ``method=None`` retries the same step.
    """

    delay_seconds: float
    method: str | None = None


@dataclasses.dataclass(frozen=True)
class RemoteUnavailable:
    """The remote service is down; retry the same step later (R-2).

    The manager chooses the delay (exponential back-off with jitter) and
    fails the order once the step has been retried too many times.
    """

    reason: str


#: What a plugin's step returns.
Result = Completed | Failed | RetryLater | RemoteUnavailable


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
