"""Notifications: each change of an order, delivered to callback URLs.

An event is written in the transaction of the change it reports
(``events``), so a change that rolls back has none and a committed one
always has one. Each URL an order is subscribed to has a *delivery*: a
step of the order named ``notify:<url id>`` that the worker pool runs
like any other step, fenced by its token, retried through the retry
scheduler and taken back by its recovery. A delivery sends the order's
events to its URL one after the other, in ``sequence`` order, the next
only once the previous one was acknowledged with a 2xx (``delivery``,
``sender``), signed as Standard Webhooks under the URL's secrets
(``signing``). Callback URLs must name a host the operator allows
(``worker.common.targets``, which the configuration checks too).
"""
