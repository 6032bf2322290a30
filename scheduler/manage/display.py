"""Turning rows into values that every cliff formatter can print, and
text that cannot rewrite the operator's screen."""

import datetime
import json
import re

from cliff import columns as cliff_columns

#: What a terminal obeys instead of printing: C0 (newline included: a
#: value must not forge a line of output), DEL, C1 (``\x9b`` is a CSI on
#: its own), the bidirectional marks, embeddings, overrides and isolates
#: (they reorder what follows, "Trojan Source"), and the line and
#: paragraph separators.
_CONTROL = re.compile('[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e'
                      '\u2066-\u2069]')


def _visible(character):
    """``character`` as Python writes it in a string literal."""
    code = ord(character)
    return '\\x%02x' % code if code < 0x100 else '\\u%04x' % code


def escape(text, keep=''):
    """``text`` with every control character written out (``\\x1b``,
    ``\\u202e``), but those in ``keep``."""
    return _CONTROL.sub(
        lambda found: found.group() if found.group() in keep
        else _visible(found.group()), text)


def value(item):
    """Return ``item`` as a table, JSON, CSV and YAML friendly value."""
    if isinstance(item, datetime.datetime):
        return item.isoformat(sep=' ', timespec='milliseconds')
    if isinstance(item, dict):
        return json.dumps(item, sort_keys=True)
    return item


def row(obj, columns):
    """Return the displayable values of ``columns`` of ``obj``."""
    return tuple(value(getattr(obj, column)) for column in columns)


class EscapedColumn(cliff_columns.FormattableColumn):
    """A column of another, its text escaped (``escape``): its own line
    breaks kept in a table, none in the one-line formats."""

    def human_readable(self):
        """What the column shows in a table, escaped but its lines."""
        return escape(str(self._value.human_readable()), keep='\n')

    def machine_readable(self):
        """What the value, CSV and shell formats print: a string escaped;
        a list or dict as is (they print its ``repr``, escaped already).
        """
        shown = self._value.machine_readable()
        return escape(shown) if isinstance(shown, str) else shown


def escaped(item):
    """``item`` as the formats for people print it (``escape``)."""
    if isinstance(item, str):
        return escape(item)
    if isinstance(item, cliff_columns.FormattableColumn):
        return EscapedColumn(item)
    return item


def escaped_row(values):
    """Each of ``values`` ``escaped``."""
    return tuple(escaped(item) for item in values)


# What a shell still reads inside double quotes. cliff's shell format
# escapes only the quote itself, after this.
_SHELL_SPECIAL = re.compile(r'[\\$`]')


def shell_quoted(item):
    """``item`` for the inside of a double-quoted shell string, once
    cliff's shell format has escaped its ``"``: a backslash, ``$`` and a
    backquote escaped, so that ``eval "$(... -f shell)"`` runs nothing of
    a value and reads it back as it was. A column is its
    ``machine_readable`` text, which the shell format prints."""
    if isinstance(item, cliff_columns.FormattableColumn):
        item = str(item.machine_readable())
    if isinstance(item, str):
        return _SHELL_SPECIAL.sub(lambda found: '\\' + found.group(), item)
    return item
