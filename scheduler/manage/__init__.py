"""The operator commands: ``barbican-retry-manage`` and
``barbican-retry-status``.

Their console scripts are the thin modules of ``scheduler.cmd``; the
application (``app``), one module per noun of ``barbican-retry-manage``
(``orders``, ``retries``, ``locks``, ``services``, ``notifications``,
``database``, ``status``), the upgrade checks (``upgrade_checks``) and
what only they read with (``explain``, ``overview``, ``display``) live
here, apart from the retry daemon. They read and write through the
repositories of the database they are given (``database.repositories``),
as the daemon does.
"""
