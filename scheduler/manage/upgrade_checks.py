"""The checks of ``barbican-retry-status upgrade check`` (oslo.upgradecheck).

Checks what an operator looks at before and after an upgrade: the schema
is at the latest revision, the OrderRetryTask lock is not stale, every
unfinished order's type is installed here, at least one retry daemon and
one worker are alive, every topic that steps are cast to (``[worker]
topic`` and each order type's own) has a live worker serving it, and every
unfinished order's graph (its ``workflow_version``) is declared by its
installed type.
"""

from oslo_upgradecheck import upgradecheck

from scheduler import liveness
from scheduler import pass_lock
from worker.common import clock
from worker.conf import order_types as type_conf
from worker.db import migration
from worker.db import models
from worker.db import session as db_session
from worker import order_types

Code = upgradecheck.Code
Result = upgradecheck.Result


class Checks(upgradecheck.UpgradeCommands):
    """The checks of ``barbican-retry-status upgrade check``."""

    def __init__(self, conf):
        super().__init__()
        self._conf = conf
        self._database = None
        self._clock = None

    def _db(self):
        if self._database is None:
            self._database = db_session.Database.from_conf(self._conf)
        return self._database

    def _check_schema(self):
        current = migration.current_revision(self._db().engine)
        heads = migration.head_revisions()
        if current in heads:
            return Result(Code.SUCCESS, 'schema at %s' % current)
        return Result(Code.FAILURE,
                      'schema at %s, latest is %s: run '
                      '"barbican-retry-manage db upgrade"'
                      % (current, ', '.join(heads)))

    def _cutoffs(self):
        if self._clock is None:
            self._clock = clock.measured(self._db(),
                                         self._conf.max_clock_offset_seconds)
        return liveness.Cutoffs.at(self._clock.now(), self._conf)

    def _check_lock(self):
        database = self._db()
        with database.session() as session:
            lock = pass_lock.judge(session, database.repositories,
                                   self._cutoffs())
        if not lock.held:
            return Result(Code.SUCCESS, 'not held')
        if lock.stale:
            return Result(Code.WARNING,
                          'held by %s since %s, stale (%s): the next pass '
                          'clears it' % (lock.holder, lock.taken_at,
                                         lock.stale_reason))
        return Result(Code.SUCCESS, 'held by %s' % lock.holder)

    def _live(self, kind):
        """The rows of the live processes of ``kind``."""
        cutoffs = self._cutoffs()
        database = self._db()
        with database.session() as session:
            rows = database.repositories.services.list_services(session,
                                                                kind)
        return [row for row in rows if cutoffs.is_alive(row.heartbeat_at)]

    def _check_live(self, kind, command_name):
        live = [row.name for row in self._live(kind)]
        if live:
            return Result(Code.SUCCESS, '%d alive: %s'
                          % (len(live), ', '.join(live)))
        return Result(Code.FAILURE, 'no live %s process' % command_name)

    def _unfinished(self, count):
        """``(installed types, count(queries.orders, session))`` of the
        unfinished orders, or a failure if a type cannot be loaded."""
        try:
            installed = order_types.installed()
        except order_types.base.InvalidOrderType as exc:
            return None, Result(Code.FAILURE, str(exc))
        database = self._db()
        with database.session() as session:
            return installed, count(database.queries.orders, session)

    def _check_order_types(self):
        installed, counts = self._unfinished(
            lambda orders, session: orders.count_unfinished_by_type(session))
        if installed is None:
            return counts
        missing = {name: count for name, count in counts.items()
                   if name not in installed}
        if missing:
            return Result(Code.FAILURE, 'unfinished orders of types not '
                          'installed here: %s; install them on every '
                          'worker' % ', '.join(
                              '%s (%d)' % item
                              for item in sorted(missing.items())))
        return Result(Code.SUCCESS, 'installed: %s'
                      % ', '.join(sorted(installed)))

    def _check_workflow_versions(self):
        installed, counts = self._unfinished(
            lambda orders, session: orders.count_unfinished_by_version(
                session))
        if installed is None:
            return counts
        # A type not installed is the order types' check's failure.
        gone = {key: count for key, count in counts.items()
                if key[0] in installed and key[1] is not None and
                key[1] not in installed[key[0]].versions}
        gone.update(self._graphs_gone_without_version(installed))
        if gone:
            return Result(Code.WARNING, 'unfinished orders of graphs their '
                          'installed type no longer declares: %s; no '
                          'worker of this release runs them: declare those '
                          'graphs in the type\'s previous_workflows until '
                          'the orders end' % ', '.join(
                              '%s version %s (%d)' % (name, version, count)
                              for (name, version), count in
                              sorted(gone.items())))
        return Result(Code.SUCCESS, 'every unfinished order\'s graph is '
                      'declared: %s' % ', '.join(
                          '%s %s' % (name, '/'.join(workflow.versions))
                          for name, workflow in sorted(installed.items())))

    def _graphs_gone_without_version(self, installed):
        """``{(type, 'of steps A, B'): count}`` of the unfinished orders
        without a version whose rows are no graph their installed type
        declares (their graph is their rows: ``Workflow.of_order``)."""
        database = self._db()
        with database.session() as session:
            graphs = database.queries.orders.\
                unfinished_graphs_without_version(session)
        gone = {}
        for (name, steps), count in graphs.items():
            if name not in installed:
                continue
            try:
                installed[name].of_order(None, steps)
            except order_types.UnknownWorkflowVersion:
                key = (name, 'of steps %s' % ', '.join(sorted(steps)))
                gone[key] = count
        return gone

    def _check_retry_daemons(self):
        return self._check_live(models.SCHEDULER, 'barbican-retry')

    def _check_workers(self):
        return self._check_live(models.WORKER, 'barbican-worker')

    def _check_topics(self):
        try:
            installed = order_types.installed()
        except order_types.base.InvalidOrderType as exc:
            return Result(Code.FAILURE, str(exc))
        conf = self._conf
        wanted = {conf.worker.topic: []}
        for name in installed:
            wanted.setdefault(type_conf.topic(conf, name), []).append(name)
        # A worker of a release before topics has none: [worker] topic.
        served = {row.topic or conf.worker.topic
                  for row in self._live(models.WORKER)}
        missing = sorted(topic for topic in wanted if topic not in served)
        if missing:
            return Result(Code.FAILURE, '; '.join(
                'no live barbican-worker serves topic %s (order types: %s)'
                % (topic, ', '.join(wanted[topic]) or 'none')
                for topic in missing) + ': start one with barbican-worker '
                '--topic TOPIC (none for [worker] topic)')
        return Result(Code.SUCCESS, 'served: %s' % ', '.join(sorted(wanted)))

    _upgrade_checks = (
        ('Database schema', _check_schema),
        ('OrderRetryTask lock', _check_lock),
        ('Order types', _check_order_types),
        ('Retry daemons', _check_retry_daemons),
        ('Workers', _check_workers),
        ('Worker topics', _check_topics),
        ('Workflow versions', _check_workflow_versions),
    )
