#!/usr/bin/env bash
# duplicates.sh [--raw] [N]: the repeated-code count of issue 22, measured
# the same way each time. It lists the pairs of places outside tests and
# generated code that share six or more lines (the same lines, or lines of
# the same shape), with the workplace's `duplicates` tool, over a copy of
# the tracked tree that leaves out:
#   - tests: *_test.go (test helpers in packages of their own count);
#   - generated files: a head that says "Code generated ... DO NOT EDIT";
#   - node_modules.
# The tool passes over import lines, but in Go it recognises only the
# `import` keyword line, not the package paths of a parenthesised block, so
# two files that import the same six standard packages make a pair. The
# copy blanks those blocks (keeping line numbers); --raw keeps them.
# docs/architecture.md, "Measuring repeated code", has the figures.
set -euo pipefail
raw=0
if [ "${1:-}" = --raw ]; then raw=1; shift; fi
most=${1:-40}
command -v duplicates >/dev/null || { echo "duplicates.sh: the duplicates tool is not on PATH" >&2; exit 1; }
root=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"
git ls-files -co --exclude-standard | grep -vE '(_test\.go$|(^|/)node_modules/)' | while read -r f; do
	[ -f "$f" ] || continue
	head -5 "$f" | grep -qE 'Code generated .*DO NOT EDIT' && continue
	mkdir -p "$tmp/$(dirname "$f")"
	if [ $raw = 0 ] && [ "${f%.go}" != "$f" ]; then
		awk '/^import \($/ {inb = 1} inb {if ($0 == ")") inb = 0; print ""; next} {print}' "$f" >"$tmp/$f"
	else
		cp "$f" "$tmp/$f"
	fi
done
duplicates --repo "$tmp" --most "$most" --seconds 300
