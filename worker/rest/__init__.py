"""The REST API, ``barbican-retry-api``: orders over HTTP (doc/rest.md).

A Flask application over ``worker.api`` and ``worker.schedule_api`` (it
adds no order logic of its own), behind oslo.middleware and
keystonemiddleware, authorized by oslo.policy. ``app.create_app`` builds
the Flask app, ``pipeline.build`` the middleware around it, ``wsgi`` the
servers that run it.
"""
