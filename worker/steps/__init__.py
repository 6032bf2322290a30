"""A step's life on a worker, from its claim to its result.

The worker's RPC endpoint (``worker.manager``) hands each step of a
message to a step thread, which takes it through these modules:

- ``claim``: claim batches of steps, fenced on their tokens; decide each
  one's kind and build its run (``runs.Run``) and order view;
- ``kinds``: the kinds of step, each with its policy, run and decision:
  ``workflow`` (a step of the order type: prechecks, the call) and
  ``delivery`` (the order's events posted to a URL);
- ``outcomes``: what a workflow step's result decides;
- ``writes``: the decided writes as values, and the writer that executes
  them one result at a time or a batch by kind;
- ``apply``: write batches of results, keep those the database refused
  (an outage), fail alone one that cannot be applied,
  cast the steps they made ready;
- ``transactions``: how the transactions of the claims (or results) of
  many threads, written together (``worker.common.group_commit``), are
  retried.
"""
