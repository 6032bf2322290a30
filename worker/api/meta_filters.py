"""Search by metadata: the checks of ``OrderAPI.list(meta=…)`` and of the
bulk actions' ``meta``, and the parsing of ``KEY=VALUE`` as the CLI and
the REST API give it.

A filter is a dotted path of keys (``issuer.name``) and a JSON scalar;
an order matches when its metadata holds that value at that path, of the
same JSON type (``worker.db.meta_search``). Given as text (``--meta
n=3``, ``?meta.n=3``), a value that parses as a JSON scalar is that
scalar (``3`` the number, ``true``, ``null``, ``"3"`` the string), any
other text is a string (``acme``): ``n=3`` matches the number 3, not the
string "3", which ``n="3"`` matches.

The bounds keep each filter cheap and each path safe to write into SQL:
at most ``MAX_META_FILTERS`` filters, ``MAX_META_PATH_DEPTH`` keys in a
path, each key of letters, digits, ``_`` and ``-`` (at most
``MAX_META_KEY_LENGTH``), and a value of at most
``MAX_META_VALUE_LENGTH`` characters as JSON.
"""

import json
import math
import re

from worker.api import errors
from worker.db import meta_search

#: The most meta filters of one request.
MAX_META_FILTERS = 8
#: The most keys in one filter's path (``a.b.c`` is 3).
MAX_META_PATH_DEPTH = 8
#: The longest key of a path.
MAX_META_KEY_LENGTH = 64
#: The longest value, in characters of its JSON.
MAX_META_VALUE_LENGTH = 256

_KEY = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_-]*\Z')
_SCALARS = (str, int, float, bool, type(None))


def check(meta):
    """The ``MetaFilter``\\ s of ``meta`` (``{'path.to.key': value}``, or
    None for none), in path order.

    :raises OutOfBounds: too many filters, a path too deep, a key or a
        value too long.
    :raises InvalidRequest: ``meta`` is not such a mapping, a key of a path
        is empty or holds another character, or a value is not a JSON
        scalar (a string, a finite number, a boolean or None).
    """
    if meta is None:
        return ()
    if not isinstance(meta, dict):
        raise errors.InvalidRequest('meta must be a mapping of dotted paths '
                                    'to values, not %r' % type(meta).__name__)
    if len(meta) > MAX_META_FILTERS:
        raise errors.OutOfBounds(
            'at most %d meta filters, not %d' % (MAX_META_FILTERS, len(meta)),
            'meta', MAX_META_FILTERS)
    return tuple(meta_search.MetaFilter(_path(path), _value(path, value))
                 for path, value in sorted(meta.items()))


def parse(items):
    """``{'path': value}`` of ``KEY=VALUE`` texts (the CLI's repeated
    ``--meta``), each value read as the module says; checked as
    ``check`` checks it.

    :raises InvalidRequest: an item without ``=``, a path given twice, or
        what ``check`` refuses.
    """
    meta = {}
    for item in items:
        path, sep, text = item.partition('=')
        if not sep:
            raise errors.InvalidRequest(
                'meta filter %r is not KEY=VALUE' % (item[:80],))
        if path in meta:
            raise errors.InvalidRequest('meta filter %s is given twice'
                                        % path[:80])
        meta[path] = parse_value(text)
    check(meta)
    return meta


def parse_value(text):
    """A filter's value of ``text``: the JSON scalar it spells, or else the
    text itself as a string.

    :raises InvalidRequest: ``text`` spells a JSON array or object.
    """
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, (list, dict)):
        raise errors.InvalidRequest(
            'a meta filter compares a value (a string, a number, true, '
            'false or null), not %s' % ('an array' if isinstance(value, list)
                                        else 'an object'))
    if isinstance(value, float) and not math.isfinite(value):
        # json.loads reads NaN and Infinity, which are no JSON.
        return text
    return value


def _path(path):
    """The tuple of keys of a dotted ``path``, checked."""
    if not isinstance(path, str):
        raise errors.InvalidRequest('a meta filter\'s path is a string, not '
                                    '%r' % type(path).__name__)
    keys = tuple(path.split('.'))
    if len(keys) > MAX_META_PATH_DEPTH:
        raise errors.OutOfBounds(
            'meta path %s is %d keys deep; at most %d'
            % (path[:200], len(keys), MAX_META_PATH_DEPTH), 'meta',
            MAX_META_PATH_DEPTH)
    for key in keys:
        if len(key) > MAX_META_KEY_LENGTH:
            raise errors.OutOfBounds(
                'meta path %s has a key longer than %d characters'
                % (path[:200], MAX_META_KEY_LENGTH), 'meta',
                MAX_META_KEY_LENGTH)
        if not _KEY.match(key):
            raise errors.InvalidRequest(
                'meta path %r: each key is letters, digits, _ or - (not '
                'starting with -), keys separated by dots' % (path[:200],))
    return keys


def _value(path, value):
    """``value``, checked to be a JSON scalar of bounded size."""
    if not isinstance(value, _SCALARS) or (
            isinstance(value, float) and not math.isfinite(value)):
        raise errors.InvalidRequest(
            'meta filter %s compares a string, a finite number, a boolean '
            'or None, not %r' % (path, type(value).__name__))
    if len(json.dumps(value)) > MAX_META_VALUE_LENGTH:
        raise errors.OutOfBounds(
            'meta filter %s: its value is longer than %d characters'
            % (path, MAX_META_VALUE_LENGTH), 'meta', MAX_META_VALUE_LENGTH)
    return value
