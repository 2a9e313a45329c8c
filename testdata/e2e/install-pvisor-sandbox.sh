#!/usr/bin/env bash
# Installs the existing replay tool, pVisor, whose contract pvisor keeps: PyPI's
# pvisor-sandbox wheel carries its static binaries. The conformance e2e test
# (replay/e2e/pvisor_conformance_test.go) runs both on the shared fixtures.
#
# Layout:  .e2e/pvisor-sandbox@<version>/bin/pvisor-replay   (and pvisor, pvisor-daemon, pvisor-tui)
# Usage:   testdata/e2e/install-pvisor-sandbox.sh    into <repo>/.e2e (PVISOR_E2E_DIR overrides)
# Prints the bin directory on its last line; re-running with it in place does nothing.
set -euo pipefail

version=0.3.1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${PVISOR_E2E_DIR:-$root/.e2e}
dest="$dir/pvisor-sandbox@$version"

mkdir -p "$dir"
[ -f "$dir/.gitignore" ] || printf '*\n' >"$dir/.gitignore"
if [ ! -x "$dest/bin/pvisor-replay" ]; then
	py=$(command -v python3 || true)
	[ -n "$py" ] || { echo "install-pvisor-sandbox: python3 (with pip) is needed to download the wheel" >&2; exit 1; }
	tmp=$(mktemp -d "$dir/.pvisor-sandbox.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	"$py" -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" "pvisor-sandbox==$version" >&2
	"$py" -m zipfile -e "$tmp"/pvisor_sandbox-"$version"-*.whl "$tmp/wheel"
	mkdir -p "$tmp/out/bin"
	for b in pvisor pvisor-replay pvisor-daemon pvisor-tui; do
		src="$tmp/wheel/pvisor_sandbox-$version.data/scripts/$b"
		[ -f "$src" ] || continue
		cp "$src" "$tmp/out/bin/$b"
		chmod 0755 "$tmp/out/bin/$b"
	done
	[ -x "$tmp/out/bin/pvisor-replay" ] || { echo "install-pvisor-sandbox: the wheel holds no pvisor-replay" >&2; exit 1; }
	rm -rf "$dest"
	mv "$tmp/out" "$dest"
fi
echo "$dest/bin"
