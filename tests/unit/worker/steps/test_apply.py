"""Applies on the in-memory database: a result that cannot be applied
fails its own step, and never holds back the other results of its batch.

``tests/functional/test_unapplied_results.py`` runs a worker process on
the real databases with outputs that cannot be written.
"""

import datetime
import logging

from oslo_db import exception as db_exc
import pytest

from tests import config
from tests import fakes
from worker.db import memory
from worker.db import models
from worker import order_types
from worker.order_types import base as types_base
from worker.plugins import base
from worker import rpcapi
from worker.steps import apply
from worker.steps import claim
from worker.steps import kinds
from worker import values

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)
OWNER = '1@host'
TYPE = 'grows'


class Grows(types_base.OrderType):
    """``first``, then ``second`` and ``third``."""

    steps = (types_base.Step('first'),
             types_base.Step('second', after=('first',)),
             types_base.Step('third', after=('first',)))

    def first(self, order):
        return base.Completed()

    second = third = first


#: A result whose output cannot be written (not JSON): its apply raises.
UNWRITABLE = base.Completed({'unwritable': object()})


@pytest.fixture
def install(monkeypatch):
    """``install(order_type)``: the ``grows`` order type is
    ``order_type`` from now on."""
    def install(order_type):
        workflows = dict(order_types.installed(),
                         grows=types_base.check(TYPE, order_type))
        monkeypatch.setattr(order_types, 'installed', lambda: workflows)
    return install


class Applies:
    """A claimer and an applier over ``database``, at ``NOW``."""

    def __init__(self, database):
        conf = config.make_conf()
        self.observed = []
        self.client = fakes.RecordingRPCClient()
        self.claimer = claim.Claimer(
            database, kinds.Kinds(conf, database, lambda: NOW, None,
                                  lambda sent, failed: None),
            OWNER, lambda: NOW, self.observed.append)
        self.applier = apply.Applier(
            database, lambda: NOW, rpcapi.WorkerAPI(self.client),
            self.observed.append, 50)

    def claim(self, *order_ids):
        """The runs of ``first`` of each order, claimed in one batch."""
        answers = self.claimer.claim_batch(
            [values.StepRef('first', order_id, 0) for order_id in order_ids])
        return [run for run, _ in answers]


def _order(database):
    with database.session() as session, session.begin():
        return database.repositories.orders.create(
            session, order_types.get(TYPE), {}, NOW).id


def _state(database, order_id):
    with database.reader() as session, session.begin():
        repositories = database.repositories
        return (repositories.orders.get(session, order_id),
                repositories.steps.for_order(session, order_id))


def _old_and_new(database, install):
    """Two orders, both claimed: ``(old, new, applies, runs)``; the old
    one's result is to be ``UNWRITABLE``."""
    install(Grows)
    old = _order(database)
    new = _order(database)
    applies = Applies(database)
    return old, new, applies, applies.claim(old, new)


def _results(runs):
    """The results of ``runs``: the first cannot be written."""
    return [(run, UNWRITABLE if index == 0 else base.Completed())
            for index, run in enumerate(runs)]


def test_a_result_that_raises_fails_its_order_alone_and_the_batch_commits(
        install, caplog):
    database = memory.InMemoryDatabase()
    old, new, applies, runs = _old_and_new(database, install)

    # The old order's result raises (its output is not JSON); the new
    # order's in the same batch goes through.
    handed = applies.applier.apply_batch(_results(runs), continuing=False)

    assert handed == [[], []]
    order, steps = _state(database, new)
    assert order.status == models.PENDING
    assert {name: step.status for name, step in steps.items()} == {
        'first': models.STEP_DONE, 'second': models.STEP_PENDING,
        'third': models.STEP_PENDING}
    assert sorted(step for step, _ in applies.client.casts) == [
        'second', 'third']
    # The old order failed alone and visibly: ERROR naming the step and
    # the error (which an operator may resume), the exception logged.
    order, steps = _state(database, old)
    assert order.status == models.ERROR
    assert 'step first' in order.error_reason
    assert 'TypeError' in order.error_reason
    assert (steps['first'].status, steps['first'].owner) == (
        models.STEP_FAILED, None)
    assert steps['second'].status == models.STEP_CANCELLED
    [logged] = [record for record in caplog.records
                if record.levelno == logging.ERROR]
    assert 'could not be applied' in logged.getMessage()
    assert isinstance(logged.exc_info[1], TypeError)
    assert sorted(applies.observed) == ['done', 'error']
    # Nothing kept to write again: no retry of the culprit.
    caplog.clear()
    applies.applier.apply_deferred_results()
    assert caplog.records == [] and len(applies.client.casts) == 2


def test_a_batch_refused_by_an_outage_is_raised_whole_to_be_kept(install):
    database = memory.InMemoryDatabase()
    install(Grows)
    applies = Applies(database)
    runs = applies.claim(_order(database), _order(database))
    session = database.session

    def down():
        raise db_exc.DBConnectionError('database gone')
    database.session = down

    with pytest.raises(db_exc.DBConnectionError):
        applies.applier.apply_batch(
            [(run, base.Completed()) for run in runs], continuing=False)

    database.session = session
    for run in runs:
        applies.applier.keep(run, base.Completed())
    applies.applier.apply_deferred_results()
    assert applies.observed == ['done', 'done']


def test_a_result_whose_failure_cannot_be_written_either_is_kept(
        install, monkeypatch):
    database = memory.InMemoryDatabase()
    old, new, applies, runs = _old_and_new(database, install)
    kind = runs[0].kind
    unapplied = kind.unapplied

    def refused(run, error):
        raise RuntimeError('cannot write that either')
    monkeypatch.setattr(kind, 'unapplied', refused)

    applies.applier.apply_batch(_results(runs), continuing=False)

    # The other result went through; this one waits, claimed, for the
    # next report_interval, not for a loop.
    assert _state(database, new)[1]['first'].status == models.STEP_DONE
    order, steps = _state(database, old)
    assert (order.status, steps['first'].owner) == (models.PENDING, OWNER)
    monkeypatch.setattr(kind, 'unapplied', unapplied)
    applies.applier.apply_deferred_results()
    assert _state(database, old)[0].status == models.ERROR


def _history(database, order_id):
    with database.reader() as session, session.begin():
        return [(run.step, run.result) for run in
                database.repositories.history.for_order(session, order_id)]


@pytest.mark.parametrize('size', [1, 2])
def test_a_failure_after_the_commit_never_writes_the_results_again(
        install, monkeypatch, caplog, size):
    database = memory.InMemoryDatabase()
    install(Grows)
    applies = Applies(database)
    order_ids = [_order(database) for _ in range(size)]
    runs = applies.claim(*order_ids)

    def broken(steps):
        raise RuntimeError('the cast broke')
    monkeypatch.setattr(applies.applier, 'cast', broken)

    handed = applies.applier.apply_batch(
        [(run, base.Completed()) for run in runs], continuing=False)

    # The batch committed once: no result written again alone, none
    # failed as unapplied, nothing kept to write again.
    assert handed == [[]] * size
    assert applies.observed == ['done'] * size
    for order_id in order_ids:
        order, steps = _state(database, order_id)
        assert order.status == models.PENDING
        assert (steps['first'].status, steps['second'].status) == (
            models.STEP_DONE, models.STEP_PENDING)
        assert _history(database, order_id) == [('first', models.RUN_DONE)]
    [logged] = [record for record in caplog.records
                if record.levelno == logging.ERROR]
    assert 'what follows their commit failed' in logged.getMessage()
    applies.applier.apply_deferred_results()
    assert applies.observed == ['done'] * size
