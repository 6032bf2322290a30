"""The operator console at ``/console`` of ``barbican-retry-api``
(doc/console.md): server-rendered pages, a Keystone login kept on the
server side, the REST API's policy rules."""
