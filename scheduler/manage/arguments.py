"""The argument types of the order and schedule commands: what an
operator typed, checked at the command line (an ``argparse`` usage error
naming the value) before anything is read or written."""

import argparse
import datetime
import json
import sys

from oslo_utils import uuidutils

from worker import api


def priority(text):
    """An argparse type: ``text`` as an order priority."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not api.MIN_PRIORITY <= value <= api.MAX_PRIORITY:
        raise argparse.ArgumentTypeError(
            'must be an integer from %d to %d, not %r'
            % (api.MIN_PRIORITY, api.MAX_PRIORITY, text))
    return value


def any_json(text):
    """An argparse type: any JSON value, or ``@FILE`` for the one in FILE
    (``@-``: standard input), as curl's ``--data @FILE``; ``(value,
    where it was read)``."""
    source = 'the argument'
    if text.startswith('@'):
        source, text = text[1:], _read_meta(text[1:])
    try:
        return json.loads(text), source
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            'not JSON (in %s): %s' % (source, exc)) from None


def payload_json(text):
    """An argparse type: a signal's payload, any JSON value (``@FILE``
    as ``meta_json``)."""
    return any_json(text)[0]


def meta_json(text):
    """An argparse type: a JSON object, or ``@FILE`` for the one in FILE
    (``@-``: standard input), as curl's ``--data @FILE``."""
    meta, source = any_json(text)
    if not isinstance(meta, dict):
        raise argparse.ArgumentTypeError(
            'must be a JSON object {...} (in %s), not %s'
            % (source, type(meta).__name__))
    return meta


def _read_meta(path):
    """The text of the file of ``--meta @FILE`` (``-``: stdin)."""
    if path == '-':
        return sys.stdin.read()
    try:
        with open(path, encoding='utf-8') as meta_file:
            return meta_file.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise argparse.ArgumentTypeError(
            'cannot read %s: %s' % (path, exc)) from None


def global_request_id(text):
    """An argparse type: a global request id, ``req-`` and a UUID, as
    oslo.middleware accepts it from another service."""
    if not (text.startswith('req-') and uuidutils.is_uuid_like(text[4:])):
        raise argparse.ArgumentTypeError(
            'must be req- followed by a UUID, not %r' % text)
    return text


def start_time(text):
    """An argparse type: ``text`` as an aware ``datetime``, an ISO 8601
    time with its zone (``2026-12-01T09:00:00Z``, ``...+01:00``): a time
    to come must not depend on the zone of the host it is typed on."""
    value = _parse_time(text, '2026-12-01T09:00:00Z')
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(
            'must say its time zone (Z for UTC, or an offset such as '
            '+01:00), not %r' % text)
    return value


def _parse_time(text, example):
    """``text`` as a ``datetime`` (aware if it has a zone); a usage error
    shows ``example``."""
    try:
        return datetime.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            'must be an ISO 8601 time such as %s, not %r'
            % (example, text)) from None


def iso_time(text):
    """An argparse type: an ISO 8601 time, as naive UTC (a time without
    a zone is UTC)."""
    moment = _parse_time(text, '2026-11-26T08:00:00Z')
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.timezone.utc).replace(
            tzinfo=None)
    return moment


def error_status(text):
    """An argparse type: the status of ``order resume --status``, which
    only ERROR orders have."""
    if text != api.ERROR:
        raise argparse.ArgumentTypeError(
            'only ERROR orders can be resumed, not %s orders' % text)
    return text


def list_limit(text):
    """An argparse type: how many orders ``order list`` shows, 1 or
    more."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < 1:
        raise argparse.ArgumentTypeError(
            'must be an integer of 1 or more (--all lists every order), '
            'not %r' % text)
    return value


def resume_limit(text):
    """An argparse type: how many orders one ``order resume`` resumes."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not 1 <= value <= api.MAX_LIMIT:
        raise argparse.ArgumentTypeError(
            'must be an integer from 1 to %d, not %r' % (api.MAX_LIMIT,
                                                         text))
    return value


def add_meta_filter(parser):
    """The repeatable ``--meta KEY=VALUE`` of ``order list`` and ``order
    bulk``."""
    parser.add_argument('--meta', action='append', default=[],
                        metavar='KEY=VALUE',
                        help='Only the orders whose metadata holds VALUE at '
                             'KEY, a dotted path (issuer.name=x); may be '
                             'repeated (all must hold). VALUE is a JSON '
                             'scalar if it reads as one (3, true, null, '
                             '"3" the string), else a string: n=3 matches '
                             'the number 3, not the string "3".')
