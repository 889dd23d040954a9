#!/usr/bin/env bash
# Lint docs/openapi.json with Redocly's CLI (its "recommended" rules and
# .redocly.yaml's), a pinned version from the npm registry installed once
# into build/redocly/ and kept there. Without npm, or with the registry
# out of reach, it says in one line that the lint was skipped and why, and
# passes: the contract test (check.py) still runs.
set -u
cd "$(dirname "$(readlink -f "$0")")/../.."

REDOCLY_VERSION=1.34.20		# runs on Debian 12's Node 18 and on Node 20
DIR=$PWD/build/redocly
BIN=$DIR/node_modules/.bin/redocly

if [ "$("$BIN" --version 2>/dev/null)" != "$REDOCLY_VERSION" ]; then
	if ! command -v npm >/dev/null; then
		echo "lint: skipped: npm is not installed (./build.sh test installs Debian's nodejs and npm as root)"
		exit 0
	fi
	mkdir -p "$DIR"
	if ! out=$(cd "$DIR" && timeout 300 npm install --no-audit --no-fund \
	    --no-save --prefix "$DIR" "@redocly/cli@$REDOCLY_VERSION" 2>&1); then
		echo "lint: skipped: npm could not install @redocly/cli@$REDOCLY_VERSION: $(grep -m1 -i 'err' <<<"$out" | cut -c1-200)"
		exit 0
	fi
fi
NO_COLOR=1 REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
    "$BIN" lint --config .redocly.yaml docs/openapi.json
