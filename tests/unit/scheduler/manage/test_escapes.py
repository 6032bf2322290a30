"""Security finding 13 of issue 42: what a caller wrote (project ids,
idempotency keys, meta, error reasons, names in rows) cannot rewrite the
operator's screen. The formats for people print control characters
written out; JSON and YAML print the exact values."""

import datetime
import json
import re
import subprocess

import pytest
import yaml

from scheduler.manage import base
from scheduler.manage import display
from worker.db import locks
from worker.db import models
from worker.db import orders
from worker import order_types

#: Erase the line, go back to its start, reverse what follows, a C1 CSI
#: and a DEL.
HOSTILE = 'ten\x1b[2K\rB\u202e\x9b31m\x7f\n'
SHOWN = 'ten\\x1b[2K\\x0dB\\u202e\\x9b31m\\x7f\\x0a'
# What a terminal obeys, the line breaks of the layout aside.
_OBEYED = re.compile('[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f'
                     '\u2028-\u202e\u2066-\u2069]')


@pytest.fixture
def hostile_order(operator):
    """An ERROR order whose project, key, meta and reason are HOSTILE (as
    rows written before the API refused such text are)."""
    now = datetime.datetime.utcnow()
    database = operator.database
    with database.session() as session, session.begin():
        order = orders.create(
            session, order_types.get('fanout'), {'note': HOSTILE}, now,
            origin=orders.Origin(project_id=HOSTILE,
                                 idempotency_key=HOSTILE))
        orders.fail(session, order.id, now, HOSTILE)
        return order.id


@pytest.mark.parametrize('argv', [
    ('order', 'show', '{id}'), ('order', 'show', '{id}', '-f', 'value'),
    ('order', 'show', '{id}', '-f', 'shell'),
    ('order', 'list',), ('order', 'list', '-f', 'value'),
    ('order', 'list', '-f', 'csv'), ('order', 'explain', '{id}')])
def test_the_formats_for_people_write_control_characters_out(
        operator, hostile_order, argv):
    result = operator.manage(*(word.format(id=hostile_order)
                               for word in argv))

    assert result.returncode == 0, result.stderr
    assert _OBEYED.search(result.stdout) is None
    # (CSV doubles a backslash.)
    assert SHOWN in result.stdout.replace('\\\\', '\\')


def test_order_show_and_list_in_json_keep_the_exact_values(
        operator, hostile_order):
    shown = json.loads(operator.manage('order', 'show', hostile_order,
                                       '-f', 'json').stdout)
    [listed] = json.loads(operator.manage('order', 'list', '-f',
                                          'json').stdout)

    assert (shown['project_id'], shown['idempotency_key'],
            shown['error_reason']) == (HOSTILE, HOSTILE, HOSTILE)
    assert json.loads(shown['meta']) == {'note': HOSTILE}
    assert listed['project_id'] == listed['error_reason'] == HOSTILE


def test_yaml_keeps_the_exact_values_in_its_own_escapes(
        operator, hostile_order):
    result = operator.manage('order', 'show', hostile_order, '-f', 'yaml')

    assert _OBEYED.search(result.stdout) is None
    assert yaml.safe_load(result.stdout)['project_id'] == HOSTILE


def test_status_writes_a_lock_holders_name_out(operator):
    with operator.database.session() as session, session.begin():
        locks.insert(session, models.ORDER_RETRY_TASK_LOCK, HOSTILE, 't',
                     datetime.datetime.utcnow())

    screen = operator.manage('status').stdout

    assert 'Lock: held by %s since' % SHOWN in screen
    assert _OBEYED.search(screen) is None


def test_an_error_naming_what_was_typed_writes_it_out(operator):
    result = operator.manage('order', 'show', '\x1b]0;owned\x07')

    # worker.api refuses the id before any lookup, naming the character.
    assert result.stderr.startswith('barbican-retry-manage: error: order_id ')
    assert result.stderr.endswith("character 0 is '\\x1b'\n")
    assert '\x1b' not in result.stderr and '\x07' not in result.stderr
    assert result.stderr.count('\n') == 1


def test_escape_writes_out_c0_c1_del_and_bidi_controls_only():
    assert display.escape('a\tb\x00\x1b\x7f\x85\u202e\u2066\u200fé') == (
        'a\\x09b\\x00\\x1b\\x7f\\x85\\u202e\\u2066\\u200fé')
    assert display.escape('one\ntwo\r', keep='\n') == 'one\ntwo\\x0d'


def test_every_command_prints_through_the_escaping_base_classes():
    from stevedore import extension
    commands = extension.ExtensionManager('barbican_retry.manage.commands')

    assert commands.names()
    assert [name for name in commands.names()
            if not issubclass(commands[name].plugin,
                              (base.Command, base.Lister, base.ShowOne))
            ] == []


#: What a shell runs inside double quotes: a command substitution in both
#: spellings, a variable, and the backslash and quote that could end the
#: string early.
SHELL_HOSTILE = 'p$(touch dollar)`touch tick`$HOME\\"x\\'


def test_the_shell_format_runs_nothing_under_eval(operator, tmp_path):
    now = datetime.datetime.utcnow()
    with operator.database.session() as session, session.begin():
        order = orders.create(
            session, order_types.get('fanout'), {}, now,
            origin=orders.Origin(project_id=SHELL_HOSTILE,
                                 idempotency_key=SHELL_HOSTILE))
    result = operator.manage('order', 'show', order.id, '-f', 'shell')
    assert result.returncode == 0, result.stderr
    shell = tmp_path / 'eval'
    shell.mkdir()

    evaluated = subprocess.run(
        ['/bin/sh', '-c', 'eval "$1"; printf "%s\\n%s" "$project_id" '
         '"$idempotency_key"', 'sh', result.stdout],
        cwd=shell, capture_output=True, text=True, timeout=60)

    assert evaluated.returncode == 0, evaluated.stderr
    assert list(shell.iterdir()) == []
    assert evaluated.stdout.split('\n') == [SHELL_HOSTILE, SHELL_HOSTILE]
