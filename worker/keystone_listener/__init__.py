"""barbican-retry-keystone-listener: the work of a project deleted in
Keystone ends with it.

Keystone announces each deleted project on the broker
(``identity.project.deleted``); the listener cancels that project's
PENDING orders and deletes its schedules, through the public
``worker.api`` and ``worker.schedule_api`` only, as any other caller
would. Its finished orders stay until the retention purges them.

- ``service``: the oslo.service ``Service`` that owns the notification
  listener, built in ``start()``;
- ``endpoint``: what a notification says (its project), and what is done
  with one that says nothing usable;
- ``manager``: the unit of work, one deleted project.
"""
