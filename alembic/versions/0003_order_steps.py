"""The steps of an order, each with its own fencing token.

Every order before this revision ran the certificate workflow
(``process_type_order`` then ``check_certificate_status``), one step at a
time, with its token, owner and dispatch time on the order. Those move to
one ``order_steps`` row per step: a PENDING order's current step keeps its
token, owner, dispatch time and consecutive failures (a run going on gets
a lease of the default 600 s), so a worker running it, a message in flight
and its retry row (which names the step and the token) all stay valid;
the steps before it are DONE, the step after it WAITING. An ACTIVE
order's steps are DONE. An order that ended in ERROR gets no step rows:
which step failed was not recorded.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

import datetime

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

Timestamp = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')

_CERTIFICATE_STEPS = ('process_type_order', 'check_certificate_status')
# worker.policy.StepPolicy's default timeout_seconds when this was written.
_DEFAULT_LEASE = datetime.timedelta(seconds=600)
_BATCH = 1000


def upgrade():
    op.create_table(
        'order_steps',
        sa.Column('order_id', sa.String(36), nullable=False),
        sa.Column('name', sa.String(64), nullable=False),
        sa.Column('status', sa.String(16), nullable=False),
        sa.Column('generation', sa.Integer(), nullable=False),
        sa.Column('attempt', sa.Integer(), nullable=False),
        sa.Column('failures', sa.Integer(), nullable=False),
        sa.Column('polls', sa.Integer(), nullable=False),
        sa.Column('owner', sa.String(255), nullable=True),
        sa.Column('claimed_at', Timestamp, nullable=True),
        sa.Column('lease_expires_at', Timestamp, nullable=True),
        sa.Column('dispatched_at', Timestamp, nullable=True),
        sa.Column('started_at', Timestamp, nullable=True),
        sa.Column('finished_at', Timestamp, nullable=True),
        sa.Column('last_error', sa.Text(), nullable=True),
        sa.Column('output', sa.JSON(), nullable=True),
        sa.Column('updated_at', Timestamp, nullable=False),
        sa.ForeignKeyConstraint(
            ['order_id'], ['orders.id'], ondelete='CASCADE',
            name='fk_order_steps_order_id_orders'),
        sa.PrimaryKeyConstraint('order_id', 'name', name='pk_order_steps'),
    )
    op.create_index('ix_order_steps_owner', 'order_steps', ['owner'])
    op.create_index('ix_order_steps_dispatched_at', 'order_steps',
                    ['dispatched_at'])
    op.create_index('ix_order_steps_lease_expires_at', 'order_steps',
                    ['lease_expires_at'])

    _move_steps(op.get_bind())

    with op.batch_alter_table('orders') as batch:
        batch.drop_index('ix_orders_owner')
        batch.drop_index('ix_orders_dispatched_at')
        for column in ('generation', 'step', 'attempt', 'owner',
                       'claimed_at', 'dispatched_at'):
            batch.drop_column(column)


def _move_steps(connection):
    # Typed where the values are times: SQLite returns them as text
    # otherwise.
    def times(*names):
        return [sa.column(name, Timestamp) for name in names]

    orders = sa.table(
        'orders', sa.column('id'), sa.column('type'), sa.column('status'),
        sa.column('generation'), sa.column('step'), sa.column('attempt'),
        sa.column('owner'),
        *times('claimed_at', 'dispatched_at', 'updated_at'))
    steps = sa.table(
        'order_steps', *(sa.column(name) for name in (
            'order_id', 'name', 'status', 'generation', 'attempt',
            'failures', 'polls', 'owner', 'last_error', 'output')),
        *times('claimed_at', 'lease_expires_at', 'dispatched_at',
               'started_at', 'finished_at', 'updated_at'))
    # Every order so far ran the certificate workflow, whatever it was
    # called.
    connection.execute(sa.update(orders).values(type='certificate'))
    query = (sa.select(orders)
             .where(orders.c.status.in_(['PENDING', 'ACTIVE']))
             .order_by(orders.c.id))
    last = None
    while True:
        page = query if last is None else query.where(orders.c.id > last)
        rows = connection.execute(page.limit(_BATCH)).fetchall()
        if not rows:
            return
        connection.execute(sa.insert(steps), [
            step for row in rows for step in _steps_of(row)])
        last = rows[-1].id


def _steps_of(order):
    """The step rows of one order as it was before this revision."""
    def row(name, status, **values):
        base = dict(order_id=order.id, name=name, status=status,
                    generation=0, attempt=0, failures=0, polls=0,
                    owner=None, claimed_at=None, lease_expires_at=None,
                    dispatched_at=None, started_at=None, finished_at=None,
                    last_error=None, output=None,
                    updated_at=order.updated_at)
        base.update(values)
        return base

    if order.status == 'ACTIVE':
        return [row(name, 'DONE', finished_at=order.updated_at)
                for name in _CERTIFICATE_STEPS]
    current = order.step or _CERTIFICATE_STEPS[0]
    names = list(_CERTIFICATE_STEPS)
    if current not in names:
        names.append(current)
    position = names.index(current)
    result = []
    for index, name in enumerate(names):
        if name == current:
            claimed_at = order.claimed_at if order.owner else None
            result.append(row(
                name, 'PENDING', generation=order.generation,
                failures=order.attempt,
                attempt=order.attempt + (1 if order.owner else 0),
                owner=order.owner, claimed_at=claimed_at,
                # A run going on during the upgrade gets the default
                # lease, so that a hung one is taken back too.
                lease_expires_at=(
                    claimed_at + _DEFAULT_LEASE if claimed_at else None),
                dispatched_at=order.dispatched_at,
                started_at=claimed_at))
        elif index < position:
            result.append(row(name, 'DONE', finished_at=order.updated_at))
        elif name in _CERTIFICATE_STEPS:
            result.append(row(name, 'WAITING'))
    return result
