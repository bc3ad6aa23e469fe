#!/usr/bin/env bash
# Installs a real n8n (2.x needs Node 24) outside the repo, once, for `npm run test:n8n`: Node 24
# from scripts/node.sh (the one the Node 24 line uses too), n8n installed with --ignore-scripts
# (its optional native builds would fail here), then sqlite3 rebuilt against that Node. About 5
# minutes and 3 GB the first time; later runs find it in the cache. Prints two lines: the n8n
# folder, then the Node folder.
set -euo pipefail
N8N_VERSION="${N8N_VERSION:-2.41.1}"
NODE24="$(bash "$(dirname "$0")/node.sh" 24)"
CACHE="${PAPERLINK_N8N_CACHE:-$HOME/.cache/paperlink-n8n}/n8n-$N8N_VERSION-$(basename "$(dirname "$(dirname "$NODE24")")")"
mkdir -p "$(dirname "$CACHE")"
# one install at a time (CI installs it in the background while the checks before it run)
exec 9>"$CACHE.lock"
flock 9
if [ ! -x "$CACHE/node_modules/.bin/n8n" ] || [ ! -f "$CACHE/.complete" ]; then
  mkdir -p "$CACHE"
  cd "$CACHE"
  [ -f package.json ] || echo '{"name":"paperlink-n8n-runtime","private":true}' > package.json
  export PATH="$NODE24/bin:$PATH"
  export npm_config_nodedir="$NODE24"
  echo "== n8n@$N8N_VERSION on node $(node --version) (about 5 minutes the first time)" >&2
  npm install --no-audit --no-fund --ignore-scripts "n8n@$N8N_VERSION" >&2
  echo "== rebuild sqlite3 for Node 24" >&2
  npm rebuild sqlite3 >&2
  touch .complete
fi
echo "$CACHE"
echo "$NODE24"
