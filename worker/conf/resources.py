"""Options of resource keys: ``[resource:PREFIX] capacity`` and ``rate``.

A step names the resource keys it uses (``worker.order_types.base.Step``
``resources``), such as ``ca:letsencrypt``. Each key takes the options of
the group named by its prefix, the text before its first ``:``
(``[resource:ca]``), or the defaults when there is no such group: a
capacity of 1 and no rate. Every key of a prefix has the whole capacity
and rate of its own: with ``[resource:ca] capacity = 5``, five steps may
use ``ca:letsencrypt`` and five others ``ca:internal`` at once.

The groups are found in the configuration files once they are parsed
(``register_found``): oslo.config cannot declare a group per prefix in
advance, and so the sample configuration shows one, ``[resource:ca]``, as
an example.
"""

import re
import typing

from oslo_config import cfg

from worker.conf import groups

GROUP_PREFIX = 'resource:'
#: The sample configuration's example group, of the keys ``ca:...``.
EXAMPLE_GROUP = GROUP_PREFIX + 'ca'
DEFAULT_CAPACITY = 1
#: The most slots a key may have: each is a row while it is held.
MAX_CAPACITY = 10000
#: The most starts per period: each is a row (``resource_starts``).
MAX_RATE_STARTS = 10000
_PERIODS = {'s': 1.0, 'm': 60.0, 'h': 3600.0}
_RATE = re.compile(r'^\s*(\d+)\s*/\s*([smh])\s*$')


class Rate(typing.NamedTuple):
    """At most ``starts`` step starts per ``period_seconds`` for a key."""

    starts: int
    period_seconds: float


def parse_rate(text: str) -> Rate:
    """The ``Rate`` of ``N/s``, ``N/m`` or ``N/h``.

    :raises ValueError: saying what a rate looks like.
    """
    found = _RATE.match(text)
    starts = int(found.group(1)) if found else 0
    if not found or not 1 <= starts <= MAX_RATE_STARTS:
        raise ValueError(
            'rate must be N/s, N/m or N/h with N from 1 to %d (such as '
            '10/s), not %r' % (MAX_RATE_STARTS, text))
    return Rate(starts, _PERIODS[found.group(2)])


resource_opts = [
    cfg.IntOpt('capacity',
               default=DEFAULT_CAPACITY, min=1, max=MAX_CAPACITY,
               help='How many steps may use one key of this prefix at '
                    'once, across every worker and host. A step that '
                    'cannot take a slot of each of its keys waits, '
                    'without counting as a failure, until a slot is '
                    'freed; steps of other keys run meanwhile.'),
    cfg.StrOpt('rate',
               help='At most this many step starts per period for one key '
                    'of this prefix, across every worker and host: N/s, '
                    'N/m or N/h (such as 10/s). A step over the rate runs '
                    'when the next start is allowed. Unset: no rate.'),
]


def prefix_of(key: str) -> str:
    """The prefix of a resource key: the text before its first ``:``."""
    return key.split(':', 1)[0]


def group_of(prefix: str) -> str:
    """The option group of a key prefix."""
    return GROUP_PREFIX + prefix


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Nothing to register before the files are parsed
    (``register_found``)."""


def register_found(conf: cfg.ConfigOpts) -> None:
    """Register the ``[resource:PREFIX]`` groups of the parsed files."""
    for section in conf.list_all_sections():
        if section.startswith(GROUP_PREFIX) and \
                len(section) > len(GROUP_PREFIX) and section not in conf:
            groups.register_group_opts(conf, cfg.OptGroup(
                section, title='Resource %s' % section[len(GROUP_PREFIX):]),
                resource_opts)


def prefixes(conf: cfg.ConfigOpts) -> list[str]:
    """The key prefixes that have a group of options."""
    return sorted(name[len(GROUP_PREFIX):] for name in conf
                  if name.startswith(GROUP_PREFIX))


def validate(conf: cfg.ConfigOpts) -> None:
    """Check every ``rate``.

    :raises ValueError: naming the group and the option.
    """
    for prefix in prefixes(conf):
        text = conf[group_of(prefix)].rate
        if text is not None:
            try:
                parse_rate(text)
            except ValueError as exc:
                raise ValueError('[%s] %s' % (group_of(prefix), exc))


def capacity(conf: cfg.ConfigOpts, key: str) -> int:
    """The capacity of resource key ``key``."""
    group = group_of(prefix_of(key))
    return conf[group].capacity if group in conf else DEFAULT_CAPACITY


def rate(conf: cfg.ConfigOpts, key: str) -> Rate | None:
    """The rate of resource key ``key``, or None for no rate."""
    group = group_of(prefix_of(key))
    text = conf[group].rate if group in conf else None
    return parse_rate(text) if text is not None else None


def list_opts() -> dict[cfg.OptGroup, list[cfg.Opt]]:
    """Return the example group's options for the sample config."""
    return {cfg.OptGroup(
        EXAMPLE_GROUP, title='Resource keys ca:*',
        help='The options of the resource keys of one prefix, here those '
             'of the keys ca:... (a group [resource:PREFIX] for each '
             'prefix used; keys of a prefix without one have a capacity '
             'of 1 and no rate).'): resource_opts}
