#!/bin/sh
# Start the retry-scheduler daemon under systemd (or by hand).
# exec, so that the daemon is the process systemd signals: SIGTERM stops it
# cleanly, SIGHUP reloads its mutable options.
CONFIG_FILE=${BARBICAN_RETRY_CONFIG:-/etc/barbican-retry/barbican-retry.conf}
exec barbican-retry --config-file "$CONFIG_FILE" "$@"
