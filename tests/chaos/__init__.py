"""The chaos run: kill processes, restart the broker and the database,
take down the receiver of the orders' notifications for a while, then
prove from the database and the logs that no order was lost, stuck,
finished twice or touched under a stale token, and that the receiver
first saw every event of every order, in sequence.

``python -m tests.chaos --db postgresql --orders 2000 --duration 180``
``python -m tests.chaos --db postgresql --type fanout`` (steps in parallel;
also proves one idempotency key per step)
"""
