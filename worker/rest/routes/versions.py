"""``/``: the version document, as other OpenStack services publish
theirs, so that a client finds ``/v1`` and its microversions."""

import flask

from worker.rest import microversions

blueprint = flask.Blueprint('versions', __name__)


def version_document(base_url):
    """The one API version, v1, with its microversion range."""
    return {'id': 'v1.0', 'status': 'CURRENT',
            'min_version': microversions.text(microversions.MIN_VERSION),
            'max_version': microversions.text(microversions.MAX_VERSION),
            'links': [{'rel': 'self', 'href': base_url + 'v1/'}]}


@blueprint.get('/')
def versions():
    """The versions this server speaks (no authentication needed)."""
    return {'versions': [version_document(flask.request.host_url)]}
