#!/usr/bin/env bash
# repo-guard: the repository's own checks, run by `make lint` (so by `make
# test`): no merge-conflict markers outside test data, every relative link
# in README.md and docs/*.md resolves (files and #anchors), and the OpenAPI
# document lints with Redocly with no errors (scripts/openapi-lint, pinned
# by its package-lock.json). Needs node and npm (scripts/test-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

fail=0

# Conflict markers: a line that starts with 7 of <, = or > and then a
# space or its end. Test data may hold them on purpose.
if markers=$(git grep -nE '^(<<<<<<<|=======|>>>>>>>)( |$)' -- . ':(exclude)**/testdata/**'); then
	echo "repo-guard: merge-conflict markers:" >&2
	echo "$markers" >&2
	fail=1
fi

command -v node >/dev/null 2>&1 || { echo "repo-guard: node is not installed (scripts/test-deps.sh installs it)" >&2; exit 1; }
node scripts/repo-guard/links.mjs || fail=1

(
	cd scripts/openapi-lint
	npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
	npx --no-install redocly lint --config redocly.yaml --format stylish ../../httpapi/openapi.json
) || { echo "repo-guard: httpapi/openapi.json does not lint (scripts/openapi-lint)" >&2; fail=1; }

exit $fail
