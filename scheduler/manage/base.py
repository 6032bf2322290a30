"""The base classes of the ``barbican-retry-manage`` commands, as
osc-lib's ``command`` module is OpenStack's client's: cliff's
``Command``, ``Lister`` and ``ShowOne``, with what every command of ours
does the same way.

- Output for people cannot rewrite the operator's screen: every value
  that the table, value, CSV and shell formats print passes through
  ``produce_output`` here and is escaped (``display.escape``); JSON and
  YAML print the exact values, in their own escapes. Commands that write
  text write it through ``write``.
- The shell format (``ShowOne`` only, as cliff has it) is safe to
  ``eval``: ``\\``, ``$`` and a backquote are escaped too, where cliff
  escapes only ``"`` (``display.shell_quoted``).
- A usage error prints a one-line usage and the error, not the usage of
  every formatter option (``--help`` shows them).
- The first paragraph of a command's docstring is its summary, on one
  line in ``barbican-retry-manage --help``; ``--help`` after a command
  shows every paragraph.
- An option's value may start with ``-`` and a digit (``--every -1s``):
  the option's own check then says what is wrong with it; for another
  value that starts with ``-`` the error says to write ``--reason=-x``.
"""

import functools
import re

from cliff import command
from cliff import lister
from cliff import show

from scheduler.manage import display

#: The formats that print values exactly, escaping what they must in
#: their own syntax (``\u001b`` in JSON, ``"\e"`` in YAML).
EXACT_FORMATS = ('json', 'yaml')

# argparse takes an argument that starts with "-" for an option, unless
# it looks like a negative number (``-1``, ``-.5``): ``--every -1s`` was
# "expected one argument". No command has an option named by a digit.
_VALUE_WITH_MINUS = re.compile(r'^-\.?\d')


def _short_usage(parser):
    """One usage line: the command, ``[options]`` and its positional
    arguments."""
    # NOTE: argparse has no public list of a parser's arguments.
    positional = [action.metavar or action.dest
                  for action in parser._actions if not action.option_strings]
    return 'usage: %s [options] %s(--help lists them)\n' % (
        parser.prog, ''.join('%s ' % name for name in positional))


_MISSING_VALUE = re.compile(r'^argument (\S+): expected one argument$')


def _usage_error(parser, error, message):
    """argparse's ``error``, saying how to give a value that starts with
    "-" (``--reason=-x``) when the value seems missing."""
    missing = _MISSING_VALUE.match(message)
    if missing is not None:
        option = missing.group(1).split('/')[-1]
        message += ' (a value that starts with "-" goes after "=": ' \
                   '%s=VALUE)' % option
    error(message)


@functools.cache
def _keeping_paragraphs(formatter_class):
    """``formatter_class`` that fills each paragraph of a description
    apart (argparse runs them into one)."""

    class Formatter(formatter_class):
        def _fill_text(self, text, width, indent):
            """Each paragraph filled, a blank line between them."""
            fill = super()._fill_text
            return '\n\n'.join(fill(paragraph, width, indent)
                               for paragraph in text.split('\n\n'))
    return Formatter


class _Common:
    """What every command of ``barbican-retry-manage`` shares."""

    def get_description(self):
        """The docstring, its first paragraph (the summary that the list
        of commands shows) on one line."""
        summary, _, rest = super().get_description().partition('\n\n')
        return ' '.join(summary.split()) + ('\n\n' + rest if rest else '')

    def get_parser(self, prog_name):
        """cliff's parser, with a short usage on errors and the
        description's paragraphs kept."""
        parser = super().get_parser(prog_name)
        parser.formatter_class = _keeping_paragraphs(parser.formatter_class)
        parser.format_usage = functools.partial(_short_usage, parser)
        parser.error = functools.partial(_usage_error, parser, parser.error)
        # NOTE: argparse's own test of a negative number (a private
        # attribute; Python 3.13 tests this prefix too).
        parser._negative_number_matcher = _VALUE_WITH_MINUS
        return parser

    def write(self, text):
        """Write ``text`` to the output, its control characters escaped
        (its line breaks kept)."""
        self.app.stdout.write(display.escape(text, keep='\n'))


class Command(_Common, command.Command):
    """A command that prints text (through ``write``) or nothing."""


class Lister(_Common, lister.Lister):
    """A command that prints rows in the format asked for (``-f``)."""

    def produce_output(self, parsed_args, column_names, data):
        """Print the rows, escaped unless the format is exact."""
        if parsed_args.formatter not in EXACT_FORMATS:
            data = [display.escaped_row(row) for row in data]
        return super().produce_output(parsed_args, column_names, data)


class ShowOne(_Common, show.ShowOne):
    """A command that prints one row, a field a line (``-f``)."""

    def produce_output(self, parsed_args, column_names, data):
        """Print the row, escaped unless the format is exact."""
        if parsed_args.formatter not in EXACT_FORMATS:
            data = display.escaped_row(data)
        if parsed_args.formatter == 'shell':
            data = tuple(display.shell_quoted(item) for item in data)
        return super().produce_output(parsed_args, column_names, data)
