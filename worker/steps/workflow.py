"""A step of an order type's workflow as a kind of step
(``worker.steps.kinds``): its policy is its type's, a precheck may end
its run before it starts, its run calls the order type, and its result is
decided by ``worker.steps.outcomes``.
"""

from oslo_log import log as logging

from worker.conf import order_types as type_options
from worker import order_types
from worker import policy as policy_module
from worker.steps import outcomes
from worker.steps import runs

LOG = logging.getLogger(__name__)


class WorkflowStepKind:
    """How a workflow step runs and how its result is decided.

    :param clock: returns the current UTC time (naive).

    A step's policy and its type's ``step_events`` are read from the
    configuration once per process. The configuration does not change
    under a running worker: on SIGHUP the launcher takes the new files and
    starts new worker processes. Reading them from oslo.config at every
    claim was about 5 % of a worker's CPU per step.
    """

    #: Runs a step of its order type's workflow (and has an order view).
    runs_workflow = True

    def __init__(self, conf, clock):
        self._conf = conf
        self._clock = clock
        self._max_crashes = conf.worker.max_step_crashes
        self._policies = {}
        self._step_events = {}

    def policy(self, workflow, step):
        """The step's policy, as configured for its type."""
        key = (workflow, step)
        found = self._policies.get(key)
        if found is None:
            if workflow.has_step(step):
                found = type_options.step_policy(self._conf, workflow, step)
            else:
                # Claimed and failed: the type no longer has this step.
                found = policy_module.StepPolicy()
            self._policies[key] = found
        return found

    def step_events(self, workflow):
        """Whether orders of ``workflow`` notify each step's end."""
        found = self._step_events.get(workflow)
        if found is None:
            found = self._step_events[workflow] = type_options.step_events(
                self._conf, workflow)
        return found

    def run(self, run, view):
        """The step's result: a precheck's, or the order type's."""
        return self._precheck(run, view) or self._call(run, view)

    def decide(self, session, repositories, run, result, now, facts=None):
        """The ``runs.Decision`` of ``result``, or None if the order is no
        longer live (a result decided under the order's lock).

        :param facts: unused: a workflow step's kind has no ``prepare``.
        """
        steps = None
        if outcomes.needs_order(run, result):
            if not repositories.orders.lock_live(session, run.order_id,
                                                 now):
                return None
            steps = repositories.steps.for_order(session, run.order_id)
        return outcomes.decide(run, result, now, steps)

    def unapplied(self, run, error):
        """What is written for a result of ``run`` that could not be
        applied (it raised ``error``): the step gives up, and its order
        goes to ERROR naming it and ``error``; resuming it runs the step
        again."""
        return policy_module.GiveUp(
            'failed: its result could not be applied (%s)' % error)

    def _call(self, run, view):
        try:
            instance = order_types.instantiate(run.workflow, self._conf)
            return instance.run(run.step, view)
        except Exception as exc:
            LOG.exception('Step %s of order %s raised', run.step,
                          run.order_id)
            return runs.StepError.of(exc)

    def _precheck(self, run, view):
        """A result that ends the run before it starts, or None.

        A lost lease counts as a failed run that the retry scheduler took
        back: the policy may have run out; deadlines pass while a step
        waits; and a step whose runs killed their processes again and
        again (a poison step) is not run once more.
        """
        if view is None:
            return policy_module.GiveUp(
                'is not a step of order type %s' % run.workflow.type_name)
        if run.resource_error is not None:
            return policy_module.GiveUp(run.resource_error)
        now = self._clock()
        deadline = type_options.order_deadline_seconds(self._conf,
                                                       run.workflow)
        if deadline and not run.compensating and \
                run.order_created_at is not None and \
                (now - run.order_created_at).total_seconds() > deadline:
            return policy_module.GiveUp(
                'stopped: the order\'s deadline of %gs passed' % deadline)
        if run.crashes >= self._max_crashes:
            return policy_module.GiveUp(
                'gave up: the worker died %d times while running this '
                'step'
                % run.crashes)
        if run.failures >= run.policy.max_attempts:
            return policy_module.GiveUp(
                'gave up after %d attempts; last error: %s'
                % (run.failures, run.last_error))
        if policy_module.past_deadline(run.policy, run.started_at, now):
            return policy_module.GiveUp(
                'reached its deadline of %gs; last error: %s'
                % (run.policy.deadline_seconds, run.last_error))
        return None
