"""What a claim reads of the signals sent to its steps' orders.

A workflow step that declares signals (``Step(signals=...)``) is shown
those sent to its order and not consumed (``OrderView.signals``); its
run keeps their ids (``runs.Run.signals``), which its result consumes
or wakes after (``worker.steps.outcomes``). One query for a whole batch
of claims; a batch whose steps declare none reads nothing.
"""


def read(session, repositories, claimed):
    """``{(order_id, step): (row, ...)}``: the unconsumed signals each
    step declares, oldest first.

    :param claimed: ``[(values.StepRef, Workflow), ...]`` of the workflow
        steps just claimed.
    """
    declared = {}
    for step, workflow in claimed:
        if workflow.has_step(step.step) and \
                workflow.step(step.step).signals:
            declared[step.order_id, step.step] = frozenset(
                workflow.step(step.step).signals)
    if not declared:
        return {}
    found = repositories.signals.unconsumed_many(
        session, {order_id for order_id, _ in declared},
        set().union(*declared.values()))
    return {key: tuple(signal for signal in found.get(key[0], ())
                       if signal.name in names)
            for key, names in declared.items()}
