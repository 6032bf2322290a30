"""``order create --priority``, ``order type list`` and ``order resume``."""

import argparse
import datetime
import io
import json

from cliff.formatters import json_format
from cliff.formatters import table as table_format
import pytest

from scheduler.manage import order_actions
from scheduler.manage import order_columns
from scheduler.manage import orders
from worker import order_types


def _parse(capsys, *argv):
    parser = orders.CreateOrders(None, None).get_parser(
        'barbican-retry-manage order create')
    return parser.parse_args(['--type', 'certificate'] + list(argv))


def test_priority_defaults_to_0_and_takes_0_to_9(capsys):
    assert _parse(capsys).priority == 0
    assert _parse(capsys, '--priority', '9').priority == 9
    assert _parse(capsys, '--priority', '0').priority == 0


@pytest.mark.parametrize('value', ['10', '-1', 'high', '1.5'])
def test_a_priority_out_of_range_is_a_usage_error(capsys, value):
    with pytest.raises(SystemExit) as exit_info:
        _parse(capsys, '--priority', value)

    assert exit_info.value.code == 2
    assert ("argument --priority: must be an integer from 0 to 9, not %r"
            % value) in capsys.readouterr().err


def _type_list(formatter):
    """``order type list`` through one of cliff's formatters."""
    columns, rows = orders.ListOrderTypes(None, None).take_action(None)
    out = io.StringIO()
    formatter.emit_list(columns, rows, out,
                        argparse.Namespace(noindent=True, max_width=0,
                                           fit_width=False,
                                           print_empty=False))
    return out.getvalue()


def test_order_type_list_shows_each_types_meta_schema_in_json():
    listed = {entry['name']: entry for entry in json.loads(
        _type_list(json_format.JSONFormatter()))}

    assert listed['fanout']['meta_schema'] == \
        order_types.get('fanout').meta_schema
    assert listed['fanout']['meta_schema']['properties']['polls'] == {
        'type': 'integer', 'minimum': 0,
        'description': 'poll answers "not yet" N times.'}
    assert set(listed['certificate']['meta_schema']['properties']) == {
        'unavailable_attempts', 'issued_on_request'}


@pytest.mark.parametrize('schema,shown', [
    (None, '-'),
    ({'type': 'object'}, '...'),
    ({'properties': {'polls': {}, 'cn': {}}}, 'polls, cn, ...'),
    ({'properties': {'polls': {}}, 'additionalProperties': False},
     'polls'),
])
def test_a_meta_schema_in_a_table_is_its_keys(schema, shown):
    assert order_columns.MetaSchemaOfType(schema).human_readable() == shown


def test_order_type_list_has_a_meta_schema_column_in_a_table():
    table = _type_list(table_format.TableFormatter())
    assert 'meta_schema' in table.splitlines()[1]
    assert 'unavailable_attempts, polls ' in table


def _resume(*argv):
    parser = order_actions.ResumeOrders(None, None).get_parser(
        'barbican-retry-manage order resume')
    return parser.parse_args(list(argv))


def test_order_resume_takes_an_id_or_the_error_status():
    assert _resume('abc').order_id == 'abc'
    parsed = _resume('--status', 'ERROR', '--type', 'fanout', '--since',
                     '2026-11-26T10:00:00+02:00', '--limit', '1000')
    assert (parsed.order_id, parsed.status, parsed.order_type,
            parsed.since, parsed.limit) == (
        None, 'ERROR', 'fanout', datetime.datetime(2026, 11, 26, 8, 0),
        1000)
    assert _resume('--status', 'ERROR', '--since',
                   '2026-11-26T08:00:00Z').since == datetime.datetime(
        2026, 11, 26, 8, 0)
    assert _resume('--status', 'ERROR', '--since',
                   '2026-11-26 08:00').since == datetime.datetime(
        2026, 11, 26, 8, 0)


@pytest.mark.parametrize('argv, message', [
    (('abc', '--status', 'ERROR'), 'not allowed with argument'),
    (('--status', 'ACTIVE'), 'argument --status: only ERROR orders can be '
                             'resumed, not ACTIVE orders'),
    (('--status', 'ERROR', '--since', 'yesterday'),
     "argument --since: must be an ISO 8601 time such as "
     "2026-11-26T08:00:00Z, not 'yesterday'"),
    (('--status', 'ERROR', '--limit', '1001'),
     "argument --limit: must be an integer from 1 to 1000, not '1001'"),
    (('--status', 'ERROR', '--limit', '0'), 'from 1 to 1000'),
])
def test_order_resume_refuses_what_cannot_be_right(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        _resume(*argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_order_resume_without_an_id_status_or_project_asks_which():
    command = order_actions.ResumeOrders(None, None)
    with pytest.raises(ValueError, match='which orders'):
        command.take_action(_resume())


@pytest.mark.parametrize('option', [('--type', 'fanout'),
                                    ('--since', '2026-11-26'),
                                    ('--limit', '5')])
def test_order_resume_of_one_order_takes_no_selection(option):
    command = order_actions.ResumeOrders(None, None)
    with pytest.raises(ValueError, match='go with --status'):
        command.take_action(_resume('abc', *option))


@pytest.mark.parametrize('text, moment', [
    ('2026-12-01T09:00:00Z', datetime.datetime(
        2026, 12, 1, 9, tzinfo=datetime.timezone.utc)),
    ('2026-12-01T10:00:00+01:00', datetime.datetime(
        2026, 12, 1, 9, tzinfo=datetime.timezone.utc))])
def test_not_before_takes_an_iso_time_with_its_zone(capsys, text, moment):
    assert _parse(capsys, '--not-before', text).not_before == moment
    assert _parse(capsys).not_before is None


@pytest.mark.parametrize('text, message', [
    ('2026-12-01T09:00:00', "argument --not-before: must say its time zone "
                            "(Z for UTC, or an offset such as +01:00), not "
                            "'2026-12-01T09:00:00'"),
    ('next week', "argument --not-before: must be an ISO 8601 time such as "
                  "2026-12-01T09:00:00Z, not 'next week'")])
def test_not_before_without_a_zone_or_not_a_time_is_a_usage_error(
        capsys, text, message):
    with pytest.raises(SystemExit) as exit_info:
        _parse(capsys, '--not-before', text)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
