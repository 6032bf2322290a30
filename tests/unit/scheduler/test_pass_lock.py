"""The pass lock's one staleness rule and its life, on the in-memory
database."""

import datetime

from oslo_db import exception as db_exc
import pytest

from scheduler import liveness
from scheduler import pass_lock
from tests import config
from worker.db import memory
from worker.db import models

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)
CUTOFFS = liveness.Cutoffs.at(NOW, config.make_conf(**{
    'service_down_time': 60, 'scheduler.retry_lock_timeout_seconds': 300}))


def _ago(seconds):
    return NOW - datetime.timedelta(seconds=seconds)


@pytest.fixture
def database():
    return memory.InMemoryDatabase()


def _given(database, taken_ago, holder_beat_ago=None):
    with database.session() as session, session.begin():
        repos = database.repositories
        if holder_beat_ago is not None:
            repos.services.heartbeat(session, '7@holder', models.SCHEDULER,
                                     'holder', 7, _ago(holder_beat_ago))
        if taken_ago is not None:
            repos.locks.insert(session, pass_lock.LOCK, '7@holder', 'token',
                               _ago(taken_ago))


def _judge_and_glance(database):
    with database.reader() as session, session.begin():
        return (pass_lock.judge(session, database.repositories, CUTOFFS),
                pass_lock.glance(session, database.repositories, CUTOFFS))


@pytest.mark.parametrize('taken_ago, beat_ago, stale, seen', [
    (None, None, False, pass_lock.Glance.FREE),
    (10, 0, False, pass_lock.Glance.FRESH),
    # Younger than service_down_time: its holder is on it, dead or not.
    (59, 120, False, pass_lock.Glance.FRESH),
    # Old enough to judge: stale only if its holder stopped heartbeating.
    (61, 0, False, pass_lock.Glance.OLD),
    (61, 61, True, pass_lock.Glance.OLD),
    (61, None, True, pass_lock.Glance.OLD),       # holder never seen
    # Older than retry_lock_timeout_seconds: stale whatever its holder.
    (301, 0, True, pass_lock.Glance.OLD),
])
def test_one_rule_for_staleness(database, taken_ago, beat_ago, stale, seen):
    _given(database, taken_ago, beat_ago)
    state, glance = _judge_and_glance(database)
    assert state.held is (taken_ago is not None)
    assert state.stale is stale
    assert glance is seen
    # A lock that may be stale is never glanced at as fresh.
    assert not (stale and glance is pass_lock.Glance.FRESH)


def test_stale_reasons_name_the_rule(database):
    _given(database, 301, 0)
    assert _judge_and_glance(database)[0].stale_reason == (
        'taken at %s, older than 300s' % _ago(301))
    with database.session() as session, session.begin():
        database.repositories.locks.force_release(session, pass_lock.LOCK)
    _given(database, 61, 61)
    assert _judge_and_glance(database)[0].stale_reason == (
        'its holder stopped heartbeating')


def test_one_holder_at_a_time_and_only_the_holder_releases(database):
    first = pass_lock.PassLock(database, '1@a')
    second = pass_lock.PassLock(database, '2@b')
    token = first.acquire(NOW)
    assert token and second.acquire(NOW) is None
    second.release('not-the-token')
    assert _judge_and_glance(database)[0].holder == '1@a'
    first.release(token)
    assert not _judge_and_glance(database)[0].held


def test_clearing_deletes_only_a_stale_lock(database):
    _given(database, 61, 0)
    lock = pass_lock.PassLock(database, '1@a')
    assert not lock.clear_if_stale(CUTOFFS)
    assert _judge_and_glance(database)[0].held
    assert lock.clear_if_stale(liveness.Cutoffs.at(
        NOW + datetime.timedelta(seconds=300),
        config.make_conf(**{'scheduler.retry_lock_timeout_seconds': 300})))
    assert not _judge_and_glance(database)[0].held


def _refused_at_commit(monkeypatch, database, name):
    """Make ``locks.name`` write, then fail as a Galera node refuses a
    write set at COMMIT: another daemon on another node won the race."""
    real = getattr(database.repositories.locks, name)

    def refused(*args, **kwargs):
        real(*args, **kwargs)
        raise db_exc.DBDeadlock()
    monkeypatch.setattr(database.repositories.locks, name, refused)


def test_a_lock_lost_at_commit_is_held_by_another(database, monkeypatch):
    _refused_at_commit(monkeypatch, database, 'insert')
    assert pass_lock.PassLock(database, '1@a').acquire(NOW) is None
    assert not _judge_and_glance(database)[0].held


def test_a_stale_lock_cleared_by_another_at_once_is_not_ours(
        database, monkeypatch):
    _given(database, 301, 0)
    _refused_at_commit(monkeypatch, database, 'release')
    assert not pass_lock.PassLock(database, '1@a').clear_if_stale(CUTOFFS)
    # Rolled back: the lock is as it was, for the winner to deal with.
    assert _judge_and_glance(database)[0].held
