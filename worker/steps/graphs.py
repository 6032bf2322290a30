"""The graph a step of an order is claimed on: the one its order was
created with (``Order.workflow_version``), never another.

A worker whose type does not declare an order's graph (a newer release's
during a rolling upgrade, or one the type no longer keeps) claims none of
its steps: unclaimed, a step counts no attempt and takes nothing, and the
retry daemon dispatches it again after ``[scheduler]
dispatch_deadline_seconds``, until a worker that declares the graph takes
it. The order is neither failed nor lost.
"""

from oslo_log import log as logging

from worker import context
from worker import order_types
from worker import values

LOG = logging.getLogger(__name__)


class Graphs:
    """Finds the workflow of each step a claim reads; logs each graph it
    does not declare once per process."""

    def __init__(self):
        #: ``(type, version)`` of the graphs not declared here, logged.
        self._unknown = set()

    def of(self, order, rows, kind):
        """The workflow a step of ``order`` (its step ``rows``) of
        ``kind`` runs on: the graph the order was created with; None for
        a delivery of an order whose type is not installed (it needs
        none).

        :raises order_types.UnknownOrderType: a workflow step's type is
            not installed.
        :raises order_types.UnknownWorkflowVersion: its type does not
            declare the order's graph.
        """
        try:
            workflow = order_types.get(order.type)
        except order_types.UnknownOrderType:
            if kind.runs_workflow:
                raise
            return None
        if not kind.runs_workflow:
            # A delivery reads its type's step events only.
            return workflow
        return workflow.of_order(order.workflow_version, rows)

    def cannot_run(self, step, order, exc):
        """Log that ``step`` of ``order`` is left unclaimed because of
        ``exc``: an unknown type at each message, an unknown graph once
        per type and version (every step of every order of that graph
        comes back at each dispatch deadline)."""
        ids = context.for_ids(values.request_ids_of(order))
        if isinstance(exc, order_types.UnknownOrderType):
            LOG.error('Cannot run %s of order %s: %s', step.step, order.id,
                      exc, context=ids)
            return
        key = (order.type, order.workflow_version)
        if key in self._unknown:
            return
        self._unknown.add(key)
        LOG.error('Leaving the orders of type %s created with workflow '
                  'version %s to a worker that declares it (first: %s of '
                  'order %s): %s', order.type, order.workflow_version,
                  step.step, order.id, exc, context=ids)
