"""The chaos run: kill processes, restart the broker and the database,
then prove from the database and the logs that no order was lost, stuck,
finished twice or touched under a stale token.

``python -m tests.chaos --db postgresql --orders 2000 --duration 180``
``python -m tests.chaos --db postgresql --type fanout`` (steps in parallel;
also proves one idempotency key per step)
"""
