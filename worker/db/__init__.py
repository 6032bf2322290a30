"""Data model and repositories of orders, retry tasks and locks.

Repositories are plain functions that take a SQLAlchemy session as their
first argument; the caller owns the transaction (``with session.begin():``).
"""
