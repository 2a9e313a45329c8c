#!/usr/bin/env bash
# Installs the real agent CLIs used by the e2e tests (go test -tags e2e ./replay/e2e)
# into an ignored folder, plus the search tools they shell out to and would otherwise
# try to download (which fails offline): ripgrep for OpenCode's glob/grep and Pi's
# grep, fd (Debian: fdfind) for Pi's find.
#
# Usage: testdata/e2e/install-clis.sh            installs into <repo>/.e2e
#        PVISOR_E2E_DIR=/some/dir install-clis.sh
# Prints the bin directory on its last line. Re-running with everything in place takes
# well under a second: a stamp file records what was installed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${PVISOR_E2E_DIR:-$root/.e2e}

# The versions the reference recordings (shared/reference/real-clients.md) were made
# with; all four are still served by the npm registry. Bump them together with the
# tested version ranges in replay/.
pkgs=(
  "@anthropic-ai/claude-code@2.1.197"
  "@openai/codex@0.171.0"
  "opencode-ai@1.18.33"
  "@mariozechner/pi-coding-agent@0.73.1"
)
bins=(claude codex opencode pi)

mkdir -p "$dir/npm"
[ -f "$dir/.gitignore" ] || printf '*\n' >"$dir/.gitignore"

stamp="$dir/npm/.pvisor-installed"
want=$(printf '%s\n' "${pkgs[@]}")
ok=1
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then ok=0; fi
for b in "${bins[@]}"; do [ -x "$dir/npm/node_modules/.bin/$b" ] || ok=0; done

if [ "$ok" = 0 ]; then
  command -v npm >/dev/null || { echo "install-clis: npm not found; install Node.js >= 20 and npm first" >&2; exit 1; }
  echo "install-clis: installing ${pkgs[*]} into $dir/npm" >&2
  rm -f "$stamp"
  # No package.json of ours: --prefix makes npm create a throwaway one in $dir/npm.
  npm install --prefix "$dir/npm" --no-audit --no-fund --no-update-notifier \
    --loglevel=error "${pkgs[@]}" >&2
  for b in "${bins[@]}"; do
    "$dir/npm/node_modules/.bin/$b" --version >/dev/null 2>&1 ||
      { echo "install-clis: $b --version failed after install; see $dir/npm" >&2; exit 1; }
  done
  printf '%s\n' "$want" >"$stamp"
fi

debs=()
command -v rg >/dev/null || debs+=(ripgrep)
command -v fdfind >/dev/null || command -v fd >/dev/null || debs+=(fd-find)
if [ ${#debs[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || { echo "install-clis: missing ${debs[*]} and no apt-get; install them by hand" >&2; exit 1; }
  echo "install-clis: installing ${debs[*]} (apt-get)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq "${debs[@]}" >&2 || { apt-get update -qq >&2 && apt-get install -y -qq "${debs[@]}" >&2; }
fi

echo "$dir/npm/node_modules/.bin"
