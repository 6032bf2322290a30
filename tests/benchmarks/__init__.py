"""Benchmarks of barbican-retry against real services (issue 4).

``python -m tests.benchmarks [--quick] [--output DIR]`` runs every
measurement of the issue against the RabbitMQ and PostgreSQL servers named
by ``BARBICAN_RETRY_TEST_TRANSPORT_URL`` and
``BARBICAN_RETRY_TEST_POSTGRESQL_URL`` (and SQLite files of its own),
prints one table, and writes ``results.json`` and PNG plots.

Each measurement lives in a module of its own (``dispatch``, ``drain``,
``pass_cost``, ``lateness``, ``memory``, ``worker_pool``); ``env`` finds
the services and makes throwaway databases, ``seed`` bulk-loads rows,
``report`` prints and plots. It prints figures; it is not a test.
"""
