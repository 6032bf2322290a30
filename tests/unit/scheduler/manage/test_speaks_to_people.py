"""Item 7 of issue 42: ``barbican-retry-manage`` speaks to people.

One error line, a short usage error, whole summaries in ``--help``, a
bounded ``order list`` that reads no meta, ``--meta @FILE``, id prefixes,
``--every -1s`` and ``order resume --project``: each run as an operator
runs it, on a real SQLite database.
"""

import datetime
import json

import pytest

from worker.db import orders
from worker.notifications import sealing
from worker import order_types

PROG = 'barbican-retry-manage'
URL = 'https://hooks.example.org/orders'


def _orders(operator, count, project='default', failed=False):
    """Insert ``count`` fanout orders (ERROR if ``failed``); their ids."""
    now = datetime.datetime.utcnow()
    with operator.database.session() as session, session.begin():
        created = [orders.create(session, order_types.get('fanout'),
                                 {'polls': 1}, now,
                                 origin=orders.Origin(project_id=project))
                   for _ in range(count)]
        for order in created if failed else ():
            orders.fail(session, order.id, now, 'it broke')
        return [order.id for order in created]


def test_an_error_is_one_line_without_log_prefix_or_class(operator):
    result = operator.manage('order', 'show', 'nosuch')

    assert (result.returncode, result.stderr) == (
        1, '%s: error: no order nosuch\n' % PROG)


def test_debug_shows_the_class_and_the_traceback(operator):
    result = operator.manage('--debug', 'order', 'show', 'nosuch')

    assert result.returncode == 1
    assert result.stderr.startswith('Traceback')
    assert 'worker.api.OrderNotFound: no order nosuch' in result.stderr
    assert result.stderr.endswith('%s: error: no order nosuch\n' % PROG)


def test_a_usage_error_is_a_usage_line_and_the_error(operator):
    result = operator.manage('order', 'list', '--limit', 'x')

    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        'usage: %s order list [options] (--help lists them)' % PROG,
        "%s order list: error: argument --limit: must be an integer of 1 "
        "or more (--all lists every order), not 'x'" % PROG]


def test_the_list_of_commands_shows_whole_summaries(operator):
    listed = {line.split('  ')[1].strip(): line
              for line in operator.manage('--help').stdout.splitlines()
              if line.startswith('  db purge') or
              line.startswith('  notification url set-secret')}

    assert listed['db purge'].endswith(
        'and every row of theirs (steps and deliveries, retry rows, events, '
        'history)')
    assert listed['notification url set-secret'].endswith(
        '(the URL is added if no order named it yet)')


def test_a_commands_help_keeps_its_paragraphs(operator):
    helped = operator.manage('order', 'list', '--help').stdout

    assert ('List orders, oldest first: the first 100, or --limit N, or '
            '--all.\n\nA note on stderr') in helped


def _ids(result):
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_order_list_shows_100_orders_and_says_so(operator):
    ids = _orders(operator, 101)

    first = operator.manage('order', 'list', '-f', 'value', '-c', 'id')
    every = operator.manage('order', 'list', '--all', '-f', 'value',
                            '-c', 'id')
    chosen = operator.manage('order', 'list', '--limit', '101', '-f',
                             'value', '-c', 'id')

    assert len(_ids(first)) == 100 and set(_ids(first)) < set(ids)
    assert first.stderr == (
        '%s: the first 100 orders; --marker %s shows the next ones, --all '
        'every one\n' % (PROG, _ids(first)[-1]))
    assert sorted(_ids(every)) == sorted(ids) == sorted(_ids(chosen))
    assert every.stderr == chosen.stderr == ''


@pytest.mark.parametrize('limit', ['0', '-1'])
def test_order_list_limit_0_is_an_error(operator, limit):
    result = operator.manage('order', 'list', '--limit', limit)

    assert result.returncode == 2
    assert 'argument --limit: must be an integer of 1 or more' in \
        result.stderr


def test_order_list_does_not_read_the_orders_meta(operator):
    _orders(operator, 2)
    # oslo.db logs each statement at this level.
    with open(operator.config, 'a') as config:
        config.write('connection_debug = 50\n')

    result = operator.manage('order', 'list', '-f', 'json')

    [select] = [line for line in result.stderr.splitlines()
                if 'SELECT orders.id' in line]
    assert 'orders.type' in select and 'orders.meta' not in select
    assert len(json.loads(result.stdout)) == 2


def test_meta_from_a_file_and_from_stdin(operator, tmp_path):
    (tmp_path / 'meta.json').write_text('{"polls": 3}')

    [from_file] = json.loads(operator.manage(
        'order', 'create', '--type', 'fanout', '--meta',
        '@%s' % (tmp_path / 'meta.json'), '-f', 'json').stdout)
    [from_stdin] = json.loads(operator.manage(
        'order', 'create', '--type', 'fanout', '--meta', '@-', '-f',
        'json', stdin='{"polls": 4}').stdout)
    missing = operator.manage('order', 'create', '--type', 'fanout',
                              '--meta', '@nosuch.json')

    for created, polls in ((from_file, 3), (from_stdin, 4)):
        shown = json.loads(operator.manage('order', 'show', created['id'],
                                           '-f', 'json').stdout)
        assert json.loads(shown['meta'])['polls'] == polls
    assert missing.returncode == 2
    assert 'argument --meta: cannot read nosuch.json' in missing.stderr


def test_a_meta_that_is_not_a_json_object_is_a_usage_error(operator):
    result = operator.manage('schedule', 'create', '--type', 'fanout',
                             '--every', '1h', '--meta', '[1]')

    assert result.returncode == 2
    assert ('argument --meta: must be a JSON object {...} (in the '
            'argument), not list') in result.stderr


def test_notification_show_takes_an_id_prefix(operator):
    [order_id] = _orders(operator, 1)

    result = operator.manage('notification', 'show', order_id[:8], '-f',
                             'json')

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_every_with_a_negative_duration_says_what_is_wrong(operator):
    result = operator.manage('schedule', 'create', '--type', 'fanout',
                             '--every', '-1s')

    assert result.returncode == 2
    assert ("argument --every: a duration is an integer and a unit" in
            result.stderr) and "not '-1s'" in result.stderr


def test_a_value_that_starts_with_a_dash_is_shown_how(operator):
    result = operator.manage('order', 'cancel', 'abc', '--reason', '-x')

    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        '%s order cancel: error: argument --reason: expected one argument '
        '(a value that starts with "-" goes after "=": --reason=VALUE)'
        % PROG)


def test_order_resume_project_resumes_that_projects_error_orders(
        operator):
    mine = _orders(operator, 2, project='mine', failed=True)
    _orders(operator, 1, project='theirs', failed=True)

    result = operator.manage('order', 'resume', '--project', 'mine', '-f',
                             'json')

    assert result.returncode == 0, result.stderr
    assert sorted(order['id'] for order in json.loads(result.stdout)) == \
        sorted(mine)
    assert {order['status'] for order in json.loads(result.stdout)} == {
        'PENDING'}


def _a_key_and_the_url(operator, tmp_path):
    """A key file in the operator's ``[notifications]``, and ``URL``
    known, without a secret."""
    keys = tmp_path / 'keys'
    keys.write_text(sealing.generate_key() + '\n')
    with operator.config.open('a') as config:
        config.write('[notifications]\nsecret_key_file = %s\n' % keys)
    with operator.database.session() as session, session.begin():
        operator.database.repositories.notifications.add_url(
            session, URL, datetime.datetime.utcnow())


@pytest.mark.parametrize('project, why', [
    ('p' * 65, 'not 65 characters'),
    ('tenant\x1b[2K', r"character 6 is '\x1b'"),
])
@pytest.mark.parametrize('command', ['set-owner', 'set-secret'])
def test_a_url_s_project_is_checked_as_the_api_checks_one(
        operator, tmp_path, command, project, why):
    """What ``--project`` stores decides whose orders may name the URL:
    it is refused as the API refuses a project id it could never match.
    """
    _a_key_and_the_url(operator, tmp_path)

    result = operator.manage('notification', 'url', command, URL,
                             '--project', project)

    assert result.returncode == 2, result.stderr
    assert 'argument --project: project_id must be' in result.stderr
    assert why in result.stderr
    with operator.database.reader() as session:
        assert operator.database.repositories.notifications.find_url(
            session, URL).project_id is None


def test_a_replaced_secret_signs_for_366_days_at_most(operator, tmp_path):
    """``--keep-old-for`` takes the bound the REST API's
    ``keep_old_for_seconds`` has (``worker.notification_admin``), in the
    command's own words."""
    _a_key_and_the_url(operator, tmp_path)

    refused = operator.manage('notification', 'url', 'set-secret', URL,
                              '--global', '--keep-old-for', '367d')
    assert refused.returncode == 2, refused.stderr
    assert ('argument --keep-old-for: a replaced secret signs for 366d at '
            'most') in refused.stderr
    with operator.database.reader() as session:
        assert operator.database.repositories.notifications.find_url(
            session, URL).secret is None

    for _ in range(2):
        done = operator.manage('notification', 'url', 'set-secret', URL,
                               '--global', '--keep-old-for', '366d',
                               '-f', 'json')
        assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown['generated_secret'].startswith('whsec_')
    assert shown['project_id'] is None
    until = datetime.datetime.fromisoformat(shown['previous_secret_until'])
    assert until - datetime.datetime.utcnow() > datetime.timedelta(days=365)
