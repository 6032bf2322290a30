"""barbican-retry-manage: the operator commands (``scheduler.manage``)."""

import sys

from scheduler.manage import app


def main(argv=None):
    """Run one operator command."""
    return app.ManageApp().run(sys.argv[1:] if argv is None else argv)


if __name__ == '__main__':
    sys.exit(main())
