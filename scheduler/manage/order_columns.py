"""How the order commands show an order's steps (``order show``) and
the order types (``order type list``): one line each in a table, the
values themselves in JSON or YAML."""

from cliff import columns as cliff_columns

from scheduler.manage import display
from worker.api import pausing

STEP_FIELDS = ('name', 'after', 'status', 'attempt', 'owner', 'started_at',
               'finished_at', 'next_retry_at', 'last_error', 'crashes',
               'waiting_for')


class StepsColumn(cliff_columns.FormattableColumn):
    """An order's steps: one line each in a table, a list in JSON."""

    def human_readable(self):
        """One line per step."""
        # A line a step, each escaped: a line break in a value must not
        # make a step of its own.
        return '\n'.join(display.escape(
            '%s: %s%s%s%s' % (
                step['name'], step['status'],
                ' (after %s)' % ', '.join(step['after'])
                if step['after'] else '',
                ', attempt %d' % step['attempt'] if step['attempt'] else '',
                _waits(step.get('waiting_for'))))
            for step in self._value)

    def machine_readable(self):
        """The list of steps, each a dict of ``STEP_FIELDS``."""
        return self._value


def _waits(waiting_for):
    """What a step's line says of what it waits for: a slot of a key, or
    a pause (``pause:<id>``, ``order show``'s ``paused_by`` names it)."""
    if not waiting_for:
        return ''
    if pausing.pause_id_of(waiting_for) is not None:
        return ', held by a pause (see paused_by)'
    return ', waits for a slot of %s' % waiting_for


class PausedByColumn(cliff_columns.FormattableColumn):
    """The pauses that hold an order: one line each in a table, a list
    of objects (``PAUSE_FIELDS``) in JSON."""

    def human_readable(self):
        """One line per pause."""
        return '\n'.join(
            display.escape('%s %s since %s%s' % (
                pause['target'], pause['name'], pause['created_at'],
                ': %s' % pause['reason'] if pause['reason'] else ''))
            for pause in self._value)

    def machine_readable(self):
        """The list of pauses."""
        return self._value


#: The fields of each pause of ``order show``'s ``paused_by``.
PAUSE_FIELDS = ('target', 'name', 'reason', 'created_at')


def describe_pauses(pauses):
    """``order show``'s ``paused_by``: a dict of ``PAUSE_FIELDS`` for
    each ``api.Pause``."""
    return [{field: display.value(getattr(pause, field))
             for field in PAUSE_FIELDS} for pause in pauses]


def describe_steps(steps):
    """The ``steps`` list of ``order show``: a dict of ``STEP_FIELDS``
    for each ``api.StepState``."""
    return [{field: display.value(getattr(step, field))
             if field != 'after' else list(step.after)
             for field in STEP_FIELDS} for step in steps]


class StepsOfType(cliff_columns.FormattableColumn):
    """A type's declared steps: ``a, b <- a`` in a table, a list in JSON."""

    def human_readable(self):
        """The steps in declaration order, each with what it comes after.
        """
        return ', '.join(
            '%s <- %s' % (step['name'], '+'.join(step['after']))
            if step['after'] else step['name'] for step in self._value)

    def machine_readable(self):
        """The list of steps, each with ``name`` and ``after``."""
        return self._value


class MetaSchemaOfType(cliff_columns.FormattableColumn):
    """A type's ``meta_schema``: its keys in a table, the schema in JSON."""

    def human_readable(self):
        """The top-level keys it declares, ``...`` if it allows others.

        ``-`` for a type with no schema.
        """
        if self._value is None:
            return '-'
        keys = list(self._value.get('properties', {}))
        if self._value.get('additionalProperties', True) is not False:
            keys.append('...')
        return ', '.join(keys)

    def machine_readable(self):
        """The JSON Schema as declared, or None."""
        return self._value
