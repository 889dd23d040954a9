#!/bin/sh
# The run directory qsup wants (mode 0700, ideally a tmpfs: --tmpfs /tmp),
# then the command.
set -e
mkdir -p -m 0700 "${XDG_RUNTIME_DIR:-/tmp/qsup-run}"
exec "$@"
