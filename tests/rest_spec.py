"""Checks every REST response the tests receive against
doc/api-ref/openapi.yaml (openapi-core), unit and functional alike."""

import json
import os
import urllib.parse

import jsonschema
from openapi_core import OpenAPI
from openapi_core.templating.paths import exceptions as path_exceptions
from openapi_core import testing as openapi_testing
import yaml

SPEC_PATH = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'doc', 'api-ref', 'openapi.yaml')
SPEC = OpenAPI.from_file_path(SPEC_PATH)

with open(SPEC_PATH) as _spec_file:
    _DOCUMENT = yaml.safe_load(_spec_file)
# The error document on its own, for the answers of paths the
# description has not (an unknown route is still a JSON error).
_ERRORS = dict(_DOCUMENT['components']['schemas']['Errors'],
               **{'$schema': 'https://json-schema.org/draft/2020-12/schema'})


# The server the description names: requests are matched on their path.
_SERVER = _DOCUMENT['servers'][0]['url']


def check_werkzeug(response):
    """Check a Werkzeug test client's ``response`` (and return it)."""
    request = response.request
    check(request.method, request.path, response.status_code,
          response.headers, response.get_data(), response.mimetype)
    return response


def check_requests(response):
    """Check a ``requests`` ``response`` (and return it)."""
    url = urllib.parse.urlsplit(response.request.url)
    check(response.request.method, url.path, response.status_code,
          response.headers, response.content,
          response.headers.get('Content-Type', '').split(';')[0])
    return response


def check(method, path, status, headers, body, content_type):
    """Check one response to ``method`` ``path`` against the
    description (a path it has not: a JSON error)."""
    request = openapi_testing.MockRequest(_SERVER, method, path)
    response = openapi_testing.MockResponse(
        body, status_code=status, headers=dict(headers),
        content_type=content_type)
    try:
        SPEC.validate_response(request, response)
    except (path_exceptions.PathNotFound,
            path_exceptions.OperationNotFound):
        # A route or method the API has not: a JSON error all the same.
        assert status in (404, 405), (status, body[:300])
        jsonschema.validate(json.loads(body), _ERRORS)
