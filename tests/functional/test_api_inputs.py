"""What a caller passes to ``worker.api`` and ``worker.schedule_api``,
on a real database: no exception but the API's own leaves them, nothing
is written for a refused request, and project ids and idempotency keys
compare exactly on every backend (issue 42, defects 7 and 16).

Before: a lone surrogate gave oslo.db's ``DBInvalidUnicodeParameter``; a
set, datetime or bytes in meta a ``DBError`` quoting the SQL; a NUL a
``DBError`` on PostgreSQL; and MariaDB's ``utf8mb4_unicode_ci`` found
the project ``TENB``'s orders for ``tenB``.
"""

import datetime
import time

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from tests import config
from worker import api
from worker.api import queries
from worker.db import models
from worker import schedule_api

UUID = '00000000-0000-0000-0000-000000000000'


@pytest.fixture
def orders(database):
    """The API without an RPC client (the first steps are left to a retry
    daemon; none runs here), callback URLs to hooks.example.org allowed.
    """
    return api.OrderAPI(database, config.make_conf(**{
        'notifications.allowed_hosts': ['hooks.example.org'],
        'notifications.secret': 'x'}))


@pytest.fixture
def schedules(database, orders):
    return schedule_api.ScheduleAPI(database, None, orders=orders)


def _rows(database):
    with database.reader() as session:
        return (session.query(models.Order).count(),
                session.query(models.Schedule).count(),
                session.query(models.NotificationUrl).count())


@pytest.mark.parametrize('arguments', [
    dict(project_id='p\ud800'), dict(idempotency_key='k\udfff'),
    dict(project_id='p\x00'), dict(idempotency_key='k\x00'),
    dict(meta={'when': {1, 2}}), dict(meta={'when': datetime.datetime(
        2026, 1, 1)}), dict(meta={'raw': b'\x00'}),
    dict(meta={'nul': 'a\x00b'}), dict(meta={'\ud800': 1}),
    dict(meta={'x': float('nan')}), dict(meta={'x': -float('inf')}),
    dict(callback_urls=['https://hooks.example.org/\ud800'])],
    ids=lambda arguments: ascii(arguments)[:40])
def test_what_no_database_stores_is_refused_by_the_api(orders, database,
                                                       arguments):
    request = dict(order_type='certificate', meta={}, project_id='p')
    request.update(arguments)
    with pytest.raises(api.InvalidRequest):
        orders.create(request.pop('order_type'), request.pop('meta'),
                      **request)
    assert _rows(database) == (0, 0, 0)


@pytest.mark.parametrize('order_id', ['\ud800', 'a\x00'])
def test_an_id_no_database_stores_is_refused_by_the_api(orders, schedules,
                                                        order_id):
    for read in (orders.get, orders.find, orders.history, schedules.get):
        with pytest.raises(api.InvalidCharacters):
            read(order_id, project_id='p')


@pytest.mark.parametrize('twin', ['TENB', 'tenB ', 'tenb'])
def test_projects_that_differ_by_case_or_a_space_are_apart(orders, twin):
    mine = orders.create('certificate', {}, project_id='tenB',
                         idempotency_key='key')
    with pytest.raises(api.OrderNotFound):
        orders.get(mine.id, project_id=twin)
    assert orders.list(project_id=twin) == []
    theirs = orders.create('certificate', {}, project_id=twin,
                           idempotency_key='key')
    assert theirs.id != mine.id
    assert [order.id for order in orders.list(project_id='tenB')] == [
        mine.id]


@pytest.mark.parametrize('twin', ['KEY', 'key ', 'Key'])
def test_keys_that_differ_by_case_or_a_space_are_two_orders(orders, twin):
    first = orders.create('certificate', {}, project_id='p',
                          idempotency_key='key')
    other = orders.create('certificate', {'unavailable_attempts': 1},
                          project_id='p', idempotency_key=twin)
    assert other.id != first.id
    assert orders.create('certificate', {}, project_id='p',
                         idempotency_key='key').id == first.id


@pytest.fixture
def existing(orders, schedules, database):
    """The ids of a PENDING order, an ERROR one (of project ``p``) and a
    schedule, for the calls that name one."""
    pending = orders.create('certificate', {}, project_id='p')
    failed = orders.create('fanout', {}, project_id='p')
    with database.session() as session, session.begin():
        database.repositories.orders.fail(session, failed.id,
                                          orders.now(), 'broken')
    schedule = schedules.create('certificate', {}, project_id='p',
                                every=60)
    return [pending.id, failed.id, failed.id[:6], schedule.id]


# Hypothesis: arbitrary JSON-ish values and strings, to every public
# method. Surrogates and control characters included.
_TEXT = (st.text(st.characters(codec=None, exclude_categories=()),
                 max_size=12) |
         st.sampled_from(['', ' ', 'p', UUID, UUID[:4], 'certificate',
                          'fanout', 'ERROR', '0 3 * * *', '61 * * * *',
                          '0 0 31 2 *', '30s', 'https://hooks.example.org/',
                          'x' * 300]))
_SCALARS = (st.none() | st.booleans() |
            st.integers(min_value=-2 ** 70, max_value=2 ** 70) |
            # Integers Python will not print (4,300 digits or more).
            st.integers(4300, 4400).map(lambda digits: 10 ** digits) |
            st.floats() | _TEXT |
            st.binary(max_size=4) | st.datetimes())
_ANY = st.recursive(
    _SCALARS,
    lambda inner: (st.lists(inner, max_size=3) |
                   st.dictionaries(_TEXT | st.integers(), inner,
                                   max_size=3) |
                   st.frozensets(st.integers(), max_size=2)),
    max_leaves=8)
_META = st.dictionaries(_TEXT, _ANY, max_size=4) | _ANY
_PROJECT = st.sampled_from(['p', 'q', None]) | _ANY
_SCOPE = st.fixed_dictionaries({}, optional={'project_id': _PROJECT,
                                             'all_projects': _ANY})
_TYPE = st.sampled_from(['certificate', 'fanout']) | _ANY
_SIGNAL = st.sampled_from(['certificate.issued', 'x.y']) | _ANY


def _optional(draw, **strategies):
    """Some of the keyword arguments ``strategies`` draw."""
    return draw(st.fixed_dictionaries({}, optional=strategies))


def _call(draw, name, ids):
    """``(positional, keyword)`` arguments for method ``name``; an id is
    one of ``ids`` (of orders and a schedule that exist) or anything."""
    one = (draw(st.sampled_from(ids) | _ANY),)
    calls = {
        'create': lambda: ((draw(_TYPE), draw(_META)), dict(
            project_id=draw(_PROJECT), **_optional(
                draw, idempotency_key=_ANY, priority=_ANY,
                callback_urls=_ANY, context=_ANY, not_before=_ANY))),
        'create_many': lambda: ((draw(_TYPE), draw(_META), draw(_ANY)),
                                {'project_id': draw(_PROJECT)}),
        'check': lambda: ((draw(_TYPE), draw(_META)), dict(
            project_id=draw(_PROJECT), **_optional(draw, priority=_ANY))),
        'list': lambda: ((), dict(draw(_SCOPE), **_optional(
            draw, status=_ANY, order_type=_ANY, limit=_ANY,
            marker=_ANY))),
        'cancel': lambda: (one, dict(draw(_SCOPE),
                                     **_optional(draw, reason=_ANY))),
        'resume_many': lambda: ((), dict(draw(_SCOPE), **_optional(
            draw, order_type=_ANY, since=_ANY, limit=_ANY,
            context=_ANY))),
        'wait': lambda: (one, dict(draw(_SCOPE), timeout=draw(_ANY))),
        'schedule.create': lambda: ((draw(_TYPE), draw(_META)), dict(
            project_id=draw(_PROJECT), **_optional(
                draw, every=_ANY, cron=_ANY, priority=_ANY))),
        'schedule.list': lambda: ((), draw(_SCOPE)),
        'signal': lambda: (one + (draw(_SIGNAL), draw(_META)), dict(
            draw(_SCOPE), **_optional(draw, signal_id=_ANY))),
    }
    if name in calls:
        return calls[name]()
    # get, find, history, resume, schedule.get, schedule.delete
    return one, draw(_SCOPE)


_METHODS = ['create', 'create_many', 'check', 'get', 'find', 'history',
            'list', 'cancel', 'resume', 'resume_many', 'wait',
            'schedule.create', 'schedule.get', 'schedule.list',
            'schedule.delete', 'signal']


@pytest.mark.parametrize('backend', ['sqlite'])
@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(data=st.data())
def test_only_the_apis_errors_leave_it(orders, schedules, existing,
                                       monkeypatch, data):
    # ``wait`` on an order that exists sleeps: a clock that jumps.
    clock = {'now': 0.0}

    def sleep(seconds):
        # An hour a sleep: a wait of a day on a PENDING order is 24 reads.
        clock['now'] += seconds and 3600
        # NaN compares false: it waited for ever.
        assert clock['now'] <= 2 * api.MAX_WAIT_SECONDS, 'waits for ever'

    monkeypatch.setattr(queries.time, 'monotonic', lambda: clock['now'])
    monkeypatch.setattr(queries.time, 'sleep', sleep)
    name = data.draw(st.sampled_from(_METHODS))
    args, kwargs = _call(data.draw, name, existing)
    owner, _, method = name.rpartition('.')
    target = schedules if owner else orders
    started = time.perf_counter()
    try:
        getattr(target, method)(*args, **kwargs)
    except api.OrderAPIError:
        pass
    # Nothing waits for long, whatever it was given (NaN was for ever).
    assert time.perf_counter() - started < 10
