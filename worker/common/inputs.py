"""Checks of what a caller of ``worker.api`` passes in: texts, numbers and
an order's metadata, against the bounds of ``[api_limits]`` and of the
columns that keep them.

Each check raises a ``Refused`` naming the field and the bound; the API
turns it into its own error (``worker.api.OutOfBounds``,
``InvalidCharacters``, ``InvalidMeta``). Nothing here reads a database
or a configuration: the bounds are parameters.

Why these bounds: every database refuses some text (PostgreSQL a NUL,
every driver a lone surrogate) with an error that quotes the SQL; a
float that is not finite is stored as invalid JSON; Python will not
print an integer of 4,300 digits; and metadata nested a thousand deep
exhausts the interpreter's stack. A value that passes here is one every
backend stores and reads back as it was given.
"""

import json
import math
import typing
import unicodedata

#: The integers metadata may hold: those of a signed 64-bit integer,
#: which every JSON reader here (and MariaDB's JSON functions) keeps
#: exactly.
MIN_INTEGER = -2 ** 63
MAX_INTEGER = 2 ** 63 - 1

_SCALARS = (str, int, float, bool, type(None))

#: The longest project id and order id (or schedule id): their columns'.
MAX_PROJECT_ID_LENGTH = 64
MAX_ORDER_ID_LENGTH = 36


class Refused(ValueError):
    """A value refused: ``field`` names it (a parameter, or a JSON path
    in metadata), ``bound`` says what it must be."""

    def __init__(self, field: str, bound: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.bound = bound


class TooLarge(Refused):
    """Too long, too large, too deep or too many."""


class BadCharacters(Refused):
    """Not a string, or a string with characters it may not hold."""


class NotJSON(Refused):
    """Metadata that JSON cannot hold exactly (``field`` is the path)."""


class BadScope(Refused):
    """Neither a project nor every project asked for, or both."""


def _forbidden(character: str, controls: bool) -> bool:
    """True for a character no text may hold: a NUL or a lone surrogate
    (which no database stores), and with ``controls`` any control
    character (C0, DEL, C1)."""
    category = unicodedata.category(character)
    return character == '\0' or category == 'Cs' or (
        controls and category == 'Cc')


def first_forbidden(text: str, controls: bool = True) -> int | None:
    """The index of the first character of ``text`` that ``_forbidden``
    refuses, or None."""
    for index, character in enumerate(text):
        if _forbidden(character, controls):
            return index
    return None


def check_text(value: object, field: str, max_length: int,
               allow_controls: bool = False) -> str:
    """``value`` if it is a string of 1 to ``max_length`` characters with
    no NUL, no lone surrogate and (unless ``allow_controls``) no control
    character.

    :raises BadCharacters: it is no string, or holds such a character.
    :raises TooLarge: it is empty or longer than ``max_length``.
    """
    bound = 'a string of 1 to %d characters without %s' % (
        max_length, 'NUL or lone surrogates' if allow_controls else
        'control characters or lone surrogates')
    if not isinstance(value, str):
        raise BadCharacters(field, bound, '%s must be %s, not %s'
                            % (field, bound, type(value).__name__))
    if not 0 < len(value) <= max_length:
        raise TooLarge(field, bound, '%s must be %s, not %d characters'
                       % (field, bound, len(value)))
    index = first_forbidden(value, controls=not allow_controls)
    if index is not None:
        raise BadCharacters(field, bound, '%s must be %s: character %d is '
                            '%s' % (field, bound, index,
                                    ascii(value[index])))
    return value


def check_order_id(value: object, field: str = 'order_id') -> str:
    """``value`` if it is an order id, or a prefix of one (``find``), or
    a schedule's id: the ``check_text`` of their column."""
    return check_text(value, field, MAX_ORDER_ID_LENGTH)


def scope(project_id: object, all_projects: object) -> str | None:
    """The project a read or change is limited to, or None for every
    project: one of ``project_id`` and ``all_projects=True``, never
    neither (a caller that forgot its project must not see every
    project's orders) nor both.

    :raises BadScope: neither or both, or ``all_projects`` not a bool.
    :raises BadCharacters, TooLarge: a project id no column holds.
    """
    bound = 'project_id or all_projects=True'
    if all_projects is not True and all_projects is not False:
        raise BadScope('all_projects', bound, 'all_projects must be True '
                       'or False, not %s' % type(all_projects).__name__)
    if all_projects:
        if project_id is not None:
            raise BadScope('project_id', bound, 'give project_id or '
                           'all_projects=True, not both')
        return None
    if project_id is None:
        raise BadScope('project_id', bound, 'project_id is required (or '
                       'all_projects=True for every project)')
    return check_text(project_id, 'project_id', MAX_PROJECT_ID_LENGTH)


def check_count(value: object, field: str, maximum: int,
                option: str | None = None) -> int:
    """``value`` if it is an integer from 1 to ``maximum`` (which
    ``option`` sets, if an option does).

    :raises TooLarge: it is not.
    """
    bound = 'an integer from 1 to %d' % maximum + (
        ' (%s)' % option if option else '')
    if isinstance(value, bool) or not isinstance(value, int) or \
            not 1 <= value <= maximum:
        raise TooLarge(field, bound, '%s must be %s, not %s'
                       % (field, bound, short(value)))
    return value


def check_seconds(value: object, field: str, maximum: float) -> float:
    """``value`` as a float if it is a finite number of seconds from 0 to
    ``maximum``.

    :raises TooLarge: it is not (None, NaN and infinities included).
    """
    bound = 'a number of seconds from 0 to %g' % maximum
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not 0 <= value <= maximum:
        # NaN fails the comparison too.
        raise TooLarge(field, bound, '%s must be %s, not %s'
                       % (field, bound, short(value)))
    return float(value)


def short(value: object) -> str:
    """``value`` for a message: an integer's size, not its digits (Python
    refuses to print one of 4,300), anything else cut short."""
    if isinstance(value, int) and not isinstance(value, bool) and \
            abs(value) > MAX_INTEGER:
        return 'an integer of %d bits' % value.bit_length()
    text = repr(value) if isinstance(value, (int, float, str)) else \
        type(value).__name__
    return text if len(text) <= 60 else text[:57] + '...'


def check_meta(meta: object, max_bytes: int, max_depth: int) -> None:
    """Check that ``meta`` is JSON every backend stores as it is: objects
    with string keys, arrays, strings without NUL or lone surrogates,
    finite floats, integers from ``MIN_INTEGER`` to ``MAX_INTEGER``,
    booleans and nulls; nested ``max_depth`` deep at most, and at most
    ``max_bytes`` bytes as compact UTF-8 JSON.

    Walked without recursion, its size counted as it goes (a lower bound
    of its serialized size), so that a huge or deep value is refused
    after reading about ``max_bytes`` of it (a string too long for what
    is left is refused by its length, before its characters are read),
    and a value that contains itself after ``max_depth`` levels.

    :raises NotJSON: a value of another kind (its path names it).
    :raises TooLarge: too deep or too large.
    """
    size = 0
    pending: list[tuple[object, str, int]] = [(meta, '$', 1)]
    while pending:
        value, path, depth = pending.pop()
        # A string's length first: a lower bound of its size that costs
        # nothing, where its characters' scan costs a pass over them all.
        if isinstance(value, str) and size + len(value) + 2 > max_bytes:
            raise _too_large(max_bytes)
        size += _size_of(value, path)
        if size > max_bytes:
            raise _too_large(max_bytes)
        if isinstance(value, (dict, list, tuple)):
            if depth > max_depth:
                bound = 'nested %d deep at most' % max_depth
                raise TooLarge('meta', bound, 'meta must be %s ([api_limits] '
                               'max_meta_depth); it is deeper at %s'
                               % (bound, path))
            pending.extend(_children(value, path, depth))
    # Exact, now that the walk bounded what there is to serialize.
    if len(json.dumps(meta, ensure_ascii=False, allow_nan=False,
                      separators=(',', ':')).encode('utf-8')) > max_bytes:
        raise _too_large(max_bytes)


def _too_large(max_bytes: int) -> TooLarge:
    bound = '%d bytes of JSON at most' % max_bytes
    return TooLarge('meta', bound, 'meta must be %s ([api_limits] '
                    'max_meta_bytes)' % bound)


def _children(value: object, path: str,
              depth: int) -> list[tuple[object, str, int]]:
    if isinstance(value, dict):
        children = []
        for key, child in value.items():
            if not isinstance(key, str):
                raise NotJSON(path, 'keys are strings', 'meta has a key '
                              'that is not a string at %s: %s'
                              % (path, short(key)))
            children.append((child, '%s.%s' % (path, _name(key)), depth + 1))
            children.append((key, '%s.%s' % (path, _name(key)), depth + 1))
        return children
    return [(child, '%s[%d]' % (path, index), depth + 1)
            for index, child in enumerate(typing.cast(list[object], value))]


def _name(key: str) -> str:
    """A key for a path in a message: its ASCII form, cut short."""
    text = ascii(key)[1:-1]
    return text if len(text) <= 40 else text[:37] + '...'


def _size_of(value: object, path: str) -> int:
    """At least the bytes ``value`` itself takes in compact JSON (its
    children apart); raises ``NotJSON`` if JSON cannot hold it."""
    if isinstance(value, str):
        index = first_forbidden(value, controls=False)
        if index is not None:
            raise NotJSON(path, 'strings without NUL or lone surrogates',
                          'meta holds a NUL or a lone surrogate at %s '
                          '(character %d)' % (path, index))
        return len(value) + 2
    if isinstance(value, bool) or value is None:
        return 4
    if isinstance(value, int):
        if not MIN_INTEGER <= value <= MAX_INTEGER:
            raise NotJSON(path, 'integers from %d to %d'
                          % (MIN_INTEGER, MAX_INTEGER),
                          'meta holds %s at %s: integers are from %d to %d'
                          % (short(value), path, MIN_INTEGER, MAX_INTEGER))
        return 1
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotJSON(path, 'finite numbers', 'meta holds %r at %s: '
                          'only finite numbers are JSON' % (value, path))
        return 1
    if isinstance(value, (dict, list, tuple)):
        return 2
    raise NotJSON(path, 'JSON values', 'meta holds a %s at %s: only '
                  'objects, arrays, strings, numbers, booleans and null'
                  % (type(value).__name__, path))
