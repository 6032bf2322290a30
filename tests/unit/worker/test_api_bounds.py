"""What ``worker.api`` refuses before it writes: the bounds of
``[api_limits]`` and of the columns, texts no database stores, values
that are not JSON, and a read or change that names no project.

Every refusal is an ``InvalidRequest`` kind naming the field and the
bound, and leaves nothing behind (issue 42, defects 6, 7 and 12).
"""

import datetime
import math

import pytest

from tests import config
from worker import api
from worker import rpcapi
from worker import schedule_api


@pytest.fixture
def database(sqlite_database):
    """SQLite, not the fake: the API's queries (``worker.db.queries``)
    are SQL only."""
    return sqlite_database


NOW = datetime.datetime(2026, 11, 26, 12, 0, 0)
PROJECT = 'c0ffee0000000000000000000000beef'
URL = 'https://hooks.example.org/%d'


@pytest.fixture
def conf():
    return config.make_conf(**{
        'notifications.allowed_hosts': ['hooks.example.org'],
        'notifications.secret': 's',
        'api_limits.max_meta_bytes': 4096,
        'api_limits.max_meta_depth': 5,
        'api_limits.max_callback_urls': 3,
        'api_limits.max_orders_per_request': 20})


@pytest.fixture
def orders(database, client, conf):
    return api.OrderAPI(database, conf, rpcapi.WorkerAPI(client),
                        now=lambda: NOW)


@pytest.fixture
def schedules(database, conf, orders):
    return schedule_api.ScheduleAPI(database, conf, orders=orders)


def _count(database):
    with database.reader() as session:
        return sum(database.repositories.orders.count_by_status(
            session).values())


def _nested(depth):
    meta = {}
    for _ in range(depth - 1):
        meta = {'a': meta}
    return meta


def _create(orders, **arguments):
    request = dict(order_type='certificate', meta={}, project_id=PROJECT)
    request.update(arguments)
    return orders.create(request.pop('order_type'), request.pop('meta'),
                         **request)


@pytest.mark.parametrize('arguments, field, bound', [
    # Defect 6: 100 MB of meta, 1,000 URLs and any count were accepted.
    (dict(meta={'pem': 'x' * 5000}), 'meta', '4096 bytes'),
    # 2,200 characters, 4,400 bytes.
    (dict(meta={'pem': ['é' * 1100] * 2}), 'meta', '4096 bytes'),
    (dict(meta=_nested(6)), 'meta', 'nested 5 deep'),
    # Defect 7: a RecursionError before.
    (dict(meta=_nested(1200)), 'meta', 'nested 5 deep'),
    (dict(callback_urls=[URL % i for i in range(4)]), 'callback_urls',
     '3 URLs'),
    (dict(project_id='p' * 65), 'project_id', '1 to 64 characters'),
    (dict(idempotency_key='k' * 256), 'idempotency_key',
     '1 to 255 characters'),
    (dict(callback_urls=['https://hooks.example.org/' + 'a' * 2048]),
     'callback_urls[0]', '1 to 2048 characters'),
])
def test_a_request_beyond_a_bound_names_the_field_and_the_bound(
        orders, database, client, arguments, field, bound):
    with pytest.raises(api.OutOfBounds) as raised:
        _create(orders, **arguments)
    assert isinstance(raised.value, api.InvalidRequest)
    assert raised.value.field == field
    assert bound in raised.value.bound and bound in str(raised.value)
    assert (_count(database), client.casts) == (0, [])


def test_the_bounds_are_the_options_read_at_each_request(orders, conf):
    meta = {'pem': 'x' * 5000}
    with pytest.raises(api.OutOfBounds, match='max_meta_bytes'):
        _create(orders, meta=meta)
    conf.set_override('max_meta_bytes', 8192, 'api_limits')
    assert _create(orders, meta=meta).meta == meta
    _create(orders, callback_urls=[URL % i for i in range(3)])


@pytest.mark.parametrize('count', [0, -1, 21, 10 ** 9, True, 2.0, '3',
                                   None])
def test_create_many_takes_up_to_max_orders_per_request(orders, database,
                                                        count):
    with pytest.raises(api.OutOfBounds) as raised:
        orders.create_many('certificate', {}, count, project_id=PROJECT)
    assert 'max_orders_per_request' in str(raised.value)
    assert _count(database) == 0
    assert len(orders.create_many('certificate', {}, 20,
                                  project_id=PROJECT)) == 20


@pytest.mark.parametrize('field', ['project_id', 'idempotency_key'])
@pytest.mark.parametrize('text', ['a\x00b', 'a\ud800', '\x1b[2Kx', 'a\nb',
                                  'a\x9bb', b'bytes', 7, ''])
def test_ids_and_keys_hold_no_control_character_or_lone_surrogate(
        orders, database, field, text):
    with pytest.raises((api.InvalidCharacters, api.OutOfBounds)) as raised:
        _create(orders, **{field: text})
    assert raised.value.field == field
    assert _count(database) == 0


@pytest.mark.parametrize('value, where', [
    ({1, 2}, 'set'), (datetime.datetime(2026, 1, 1), 'datetime'),
    (b'bytes', 'bytes'), (float('nan'), 'nan'), (float('inf'), 'inf'),
    (-math.inf, 'inf'),
    pytest.param(10 ** 5000, 'integer of 16610 bits', id='huge'),
    (2 ** 63, 'integers are from'), ('a\x00b', 'NUL'),
    ('\udc80', 'lone surrogate'), ({1: 'a'}, 'not a string'),
    (object(), 'object')])
def test_meta_holds_only_what_json_keeps(orders, database, value, where):
    # Before: an oslo.db DBError quoting the SQL, a ValueError from the
    # digits of a huge integer, or NaN stored as invalid JSON.
    with pytest.raises(api.InvalidMeta) as raised:
        _create(orders, meta={'deep': [{'x': value}]})
    assert (raised.value.path, raised.value.rule) == ('$.deep[0].x',
                                                      'json') or \
        raised.value.path == '$.deep[0]'
    assert where in str(raised.value)
    assert _count(database) == 0


def test_what_json_keeps_is_kept(orders):
    meta = {'i': 2 ** 63 - 1, 'j': -2 ** 63, 'f': 1.5, 'n': None,
            'b': False, 's': 'line\nbreak\tand é', 'l': [[[]]]}
    assert _create(orders, meta=meta).meta == meta


@pytest.mark.parametrize('order_id', ['a\ud800', 'x' * 37, 'a\x00', 5, None])
@pytest.mark.parametrize('read', ['get', 'find', 'history', 'cancel',
                                  'resume'])
def test_an_order_id_no_column_holds_is_refused(orders, read, order_id):
    with pytest.raises((api.InvalidCharacters, api.OutOfBounds)) as raised:
        getattr(orders, read)(order_id, project_id=PROJECT)
    assert raised.value.field == 'order_id'


@pytest.mark.parametrize('timeout', [None, float('nan'), float('inf'), -1,
                                     86401,
                                     pytest.param(10 ** 5000, id='huge'),
                                     '5', True])
def test_wait_takes_a_finite_number_of_seconds(orders, timeout):
    # Before: a TypeError for None, and NaN waited for ever.
    order = _create(orders)
    with pytest.raises(api.OutOfBounds) as raised:
        orders.wait(order.id, timeout=timeout, project_id=PROJECT)
    assert raised.value.field == 'timeout'


@pytest.mark.parametrize('arguments', [
    dict(status='\ud800'), dict(order_type='\ud800'), dict(marker='\x00'),
    pytest.param(dict(limit=10 ** 5000), id='huge'), dict(limit=True),
    dict(limit=1.0)])
def test_list_refuses_what_no_column_holds(orders, arguments):
    with pytest.raises(api.InvalidRequest):
        orders.list(project_id=PROJECT, **arguments)


@pytest.mark.parametrize('arguments', [
    dict(not_before=datetime.datetime.min.replace(
        tzinfo=datetime.timezone(datetime.timedelta(hours=5)))),
    dict(not_before='tomorrow'), dict(context='a context'),
    dict(context=type('Context', (), {'request_id': 'r' * 65,
                                      'global_request_id': None})()),
    dict(callback_urls={'https://hooks.example.org/'}),
    dict(callback_urls=[7])])
def test_other_parameters_of_create_are_refused_as_requests(
        orders, database, arguments):
    with pytest.raises(api.InvalidRequest):
        _create(orders, **arguments)
    assert _count(database) == 0


# Every method that reads or changes orders (or schedules), with what it
# needs besides the project.
_SCOPED = [
    ('get', ('00000000-0000-0000-0000-000000000000',), {}),
    ('find', ('0000',), {}),
    ('history', ('0000',), {}),
    ('cancel', ('00000000-0000-0000-0000-000000000000',), {}),
    ('resume', ('00000000-0000-0000-0000-000000000000',), {}),
    ('wait', ('00000000-0000-0000-0000-000000000000',), {'timeout': 0}),
    ('list', (), {}),
    ('resume_many', (), {}),
    ('signal', ('00000000-0000-0000-0000-000000000000',
                'certificate.issued'), {}),
]
_SCHEDULE_SCOPED = [
    ('get', ('00000000-0000-0000-0000-000000000000',), {}),
    ('delete', ('00000000-0000-0000-0000-000000000000',), {}),
    ('list', (), {}),
    ('trigger', ('00000000-0000-0000-0000-000000000000',), {}),
]


def _scoped_calls(orders, schedules):
    return ([(getattr(orders, name), args, kwargs)
             for name, args, kwargs in _SCOPED] +
            [(getattr(schedules, name), args, kwargs)
             for name, args, kwargs in _SCHEDULE_SCOPED])


@pytest.mark.parametrize('scope, message', [
    ({}, 'project_id is required'),
    (dict(project_id=None), 'project_id is required'),
    (dict(all_projects=False), 'project_id is required'),
    (dict(project_id=PROJECT, all_projects=True), 'not both'),
    (dict(all_projects='yes'), 'True or False'),
    (dict(project_id='\x00'), 'project_id'),
])
def test_a_read_or_change_without_a_project_fails_closed(
        orders, schedules, database, scope, message):
    # Defect 12: project_id=None was every project's view.
    theirs = _create(orders, project_id='theirs')
    for method, args, kwargs in _scoped_calls(orders, schedules):
        with pytest.raises(api.InvalidRequest, match=message) as raised:
            method(*args, **dict(kwargs, **scope))
        assert isinstance(raised.value,
                          (api.InvalidProjectScope, api.InvalidCharacters))
    assert orders.get(theirs.id, project_id='theirs').status == api.PENDING


def test_all_projects_is_every_projects_view(orders, schedules):
    theirs = _create(orders, project_id='theirs')
    schedule = schedules.create('certificate', {}, project_id='theirs',
                                every=60)
    assert orders.get(theirs.id, all_projects=True).id == theirs.id
    assert [order.id for order in orders.list(all_projects=True)] == [
        theirs.id]
    assert orders.list(project_id=PROJECT) == []
    assert schedules.get(schedule.id, all_projects=True).id == schedule.id
    assert schedules.list(project_id=PROJECT) == []
    with pytest.raises(schedule_api.ScheduleNotFound):
        schedules.delete(schedule.id, project_id=PROJECT)
    assert orders.cancel(theirs.id, all_projects=True).status == \
        api.CANCELLED


@pytest.mark.parametrize('arguments, error', [
    (dict(cron='0 0 31 2 *'), 'matches no date'),
    (dict(cron='61 * * * *'), 'minute field'),
    (dict(cron='0 0 * * *' + ' ' * 300), '255 characters'),
    (dict(every=float('nan')), 'interval'),
    pytest.param(dict(every=10 ** 5000), 'interval', id='huge'),
    (dict(every='\ud800'), 'duration'),
    (dict(every=60, meta={'deep': _nested(1000)}), 'nested'),
    (dict(cron='0 3 * * *', timezone=7), 'time zone is a string'),
    (dict(cron='0 3 * * *', timezone='\ud800'), 'unknown time zone'),
    (dict(cron='0 3 * * *', timezone='Europe/\x00'), 'unknown time zone'),
    (dict(cron='0 3 * * *', timezone='A/' * 600), 'unknown time zone'),
    (dict(cron='0 3 * * *', timezone='/etc/localtime'), 'unknown time zone'),
    (dict(every=60, overlap=['skip']), 'overlap policy'),
    (dict(every=60, overlap='\ud800'), 'overlap policy'),
])
def test_a_schedule_is_refused_by_an_invalid_request(schedules, database,
                                                     arguments, error):
    with pytest.raises(api.InvalidRequest, match=error):
        schedules.create('certificate', arguments.pop('meta', {}),
                         project_id=PROJECT, **arguments)
    assert schedules.list(all_projects=True) == []


def test_meta_that_contains_itself_is_refused_by_its_depth(orders, database):
    # Before: json's ValueError (circular reference) from the database
    # layer; a wide one never ended.
    looped = {}
    looped['self'] = looped
    wide = []
    wide.extend([wide] * 1000)
    for meta in (looped, {'wide': wide}):
        with pytest.raises(api.OutOfBounds):
            _create(orders, meta=meta)
    assert _count(database) == 0
