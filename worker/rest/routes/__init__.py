"""The REST API's resources: one module (a Flask blueprint) each."""
