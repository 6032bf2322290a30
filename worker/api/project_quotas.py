"""``QuotaAPI``: the admin's view and overrides of the per-project quotas
of PENDING orders (``/v1/project-quotas``).

A project's quota is the admin's override of it, or ``[quota]
pending_orders_per_project``; -1 is no bound. What a create counts
against it is ``worker.api.quotas``.
"""

import dataclasses

from oslo_db import exception as db_exc

from worker.api import checks
from worker.api import errors
from worker.api import quotas

#: The largest override: the column's (a signed 32-bit integer).
MAX_QUOTA = 2 ** 31 - 1


@dataclasses.dataclass(frozen=True)
class ProjectQuota:
    """A project's quota of PENDING orders."""

    project_id: str
    #: The bound its creates meet: ``override`` if set, else ``default``;
    #: -1 for none.
    pending_orders: int
    #: The admin's override, or None.
    override: int | None
    #: ``[quota] pending_orders_per_project``.
    default: int


class QuotaAPI:
    """Read and override per-project quotas.

    :param database: the ``worker.db.session.Database`` of the orders.
    :param conf: the ``ConfigOpts`` with ``[quota]`` registered.
    :param now: a callable of the processes' shared time (``OrderAPI.now``).
    """

    def __init__(self, database, conf, now):
        self._database = database
        self._conf = conf
        self._now = now

    def _value(self, project_id, override):
        default = self._conf.quota.pending_orders_per_project
        return ProjectQuota(project_id,
                            default if override is None else override,
                            override, default)

    def get(self, project_id):
        """The project's quota (any project: one never overridden has the
        default)."""
        checks.check_project(project_id)
        with self._database.reader() as session:
            row = self._database.repositories.quotas.get(session, project_id)
        return self._value(project_id,
                           row.pending_orders if row is not None else None)

    def list(self):
        """The projects whose quota the admin overrode, by project id."""
        with self._database.reader() as session:
            rows = self._database.queries.quotas.overrides(session)
        return [self._value(row.project_id, row.pending_orders)
                for row in rows]

    def set(self, project_id, pending_orders):
        """Override the project's quota; -1 for no bound.

        :raises OutOfBounds: ``pending_orders`` is below -1 or too large.
        """
        checks.check_project(project_id)
        if isinstance(pending_orders, bool) or not isinstance(
                pending_orders, int) or not (
                quotas.UNLIMITED <= pending_orders <= MAX_QUOTA):
            raise errors.OutOfBounds(
                'pending_orders must be an integer from -1 to %d'
                % MAX_QUOTA, 'pending_orders', MAX_QUOTA)
        self._write(project_id, pending_orders)
        return self._value(project_id, pending_orders)

    def delete(self, project_id):
        """Drop the project's override: the default applies again."""
        checks.check_project(project_id)
        self._write(project_id, None)
        return self._value(project_id, None)

    def _write(self, project_id, pending_orders):
        now = self._now()
        with self._database.session() as session, session.begin():
            if self._database.queries.quotas.set_override(
                    session, project_id, pending_orders, now):
                return
        if pending_orders is None:
            return
        try:
            with self._database.session() as session, session.begin():
                self._database.repositories.quotas.insert(
                    session, project_id, pending_orders, now)
        except db_exc.DBDuplicateEntry:
            # A create inserted the project's row meanwhile: set it.
            with self._database.session() as session, session.begin():
                self._database.queries.quotas.set_override(
                    session, project_id, pending_orders, now)
