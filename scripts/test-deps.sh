#!/usr/bin/env bash
# test-deps: installs what `make test` needs beside Go, from Debian's
# packages, when it is missing: Chromium (the pay page and console tests
# drive it headless), Node.js and npm (the TypeScript client, the npm
# interop tests: x402, MCP, wallet URI parsers, Hardhat) and systemd's
# systemd-analyze (the service unit test). Nothing is installed that is
# already there; on a machine without apt-get it says what to install.
set -euo pipefail

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
[ ${#missing[@]} -eq 0 ] && exit 0

echo "test-deps: installing ${missing[*]} (Debian packages) for make test" >&2
if ! command -v apt-get >/dev/null 2>&1; then
	echo "test-deps: no apt-get here; install ${missing[*]} with your package manager and run make test again" >&2
	exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || { echo "test-deps: run as root or install sudo to install ${missing[*]}" >&2; exit 1; }
	sudo=(sudo)
fi
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
