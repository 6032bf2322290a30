"""The ``openstack retry`` commands: a python-openstackclient plugin.

The commands speak to ``barbican-retry-api`` over HTTP with the
keystoneauth1 session that ``openstack`` builds from ``clouds.yaml`` or
``OS_*`` variables; nothing here imports the rest of the project, so the
plugin needs no database or broker credentials.
"""
