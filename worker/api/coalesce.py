"""Casts of concurrent callers sent together: fewer, fuller messages.

An API server creating single orders casts each order's first steps in a
message of its own, and each message costs a worker its receive path
(poll, decode, acknowledge, dispatch: about 40 % of a worker's time in a
profile), however few steps it carries. ``CoalescedCasts`` wraps a
``worker.rpcapi.WorkerAPI``: the casts asked for while another is being
sent go together in the next messages, up to ``rows_per_cast`` steps each
(``worker.common.group_commit``, as the worker batches its claims). A
caller alone sends at once, as before; nothing waits for a batch to
fill.

A message of several callers carries no sender's request ids of its own
(each order's ids still go beside its steps: ``rpcapi.steps_context``);
a message of one caller carries its caller's, as before.
"""

from worker.common import group_commit

#: The most callers whose casts are sent together.
_MAX_CALLERS = 50


class CoalescedCasts:
    """A ``WorkerAPI`` whose concurrent ``run_steps`` share messages.

    :param worker_api: the ``worker.rpcapi.WorkerAPI`` that sends them.
    :param rows_per_cast: the most steps in one message.
    """

    def __init__(self, worker_api, rows_per_cast):
        self._worker_api = worker_api
        self._rows_per_cast = rows_per_cast
        self._send = group_commit.GroupCommit(self._send_batch,
                                              _MAX_CALLERS)

    def topic(self, step):
        """The topic ``step`` is cast to (``WorkerAPI.topic``)."""
        return self._worker_api.topic(step)

    def run_steps(self, steps, context=None):
        """Cast ``steps`` (``WorkerAPI.run_steps``), with those of the
        callers that cast meanwhile.

        :raises: the error of a message that carried some of ``steps``.
        """
        error = self._send((list(steps), context))
        if error is not None:
            raise error

    def _send_batch(self, items):
        """Send the steps of ``items`` (``[(steps, context), ...]``) in
        messages of up to ``rows_per_cast``; per item, the error of a
        message that carried some of its steps, or None."""
        if len(items) == 1:
            steps, context = items[0]
            return [self._sent(steps, context)]
        owners, steps = [], []
        for index, (item_steps, _) in enumerate(items):
            owners.extend([index] * len(item_steps))
            steps.extend(item_steps)
        errors = [None] * len(items)
        for start in range(0, len(steps), self._rows_per_cast):
            error = self._sent(steps[start:start + self._rows_per_cast])
            if error is not None:
                for index in set(owners[start:start + self._rows_per_cast]):
                    errors[index] = errors[index] or error
        return errors

    def _sent(self, steps, context=None):
        """Send ``steps`` in one message per topic; its error, or None."""
        try:
            self._worker_api.run_steps(steps, context=context)
        except Exception as exc:
            return exc
        return None
