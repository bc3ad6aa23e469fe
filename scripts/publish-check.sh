#!/usr/bin/env bash
# What publishing needs, checked before a tag is pushed (.ci/run runs it after lint):
# - the workflows in .github/workflows pass actionlint (built once from the Go module proxy into
#   ~/.cache/paperlink-actionlint, with shellcheck checking their scripts where Debian's is there);
# - `npm publish --dry-run` of both packages says nothing but that this machine is not logged in.
# Run after `npm run build`.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${ACTIONLINT_VERSION:-v1.7.12}"
bin="$HOME/.cache/paperlink-actionlint/$version"
if [ ! -x "$bin/actionlint" ]; then
  echo "building actionlint $version into $bin (once)"
  mkdir -p "$bin"
  GOBIN="$bin" go install "github.com/rhysd/actionlint/cmd/actionlint@$version"
fi
"$bin/actionlint" -no-color -oneline
echo "ok   actionlint $version: .github/workflows"

status=0
for dir in packages/n8n-nodes-paperlink .; do
  name="$(node -p "require('./$dir/package.json').name")"
  out="$(cd "$dir" && npm publish --dry-run 2>&1)" || { echo "FAIL npm publish --dry-run of $name"; echo "$out"; status=1; continue; }
  warnings="$(printf '%s\n' "$out" | grep -E '^npm (warn|WARN|error|ERR)' | grep -v 'requires you to be logged in' || true)"
  if [ -n "$warnings" ]; then
    echo "FAIL npm publish --dry-run of $name:"
    echo "$warnings"
    status=1
  else
    echo "ok   npm publish --dry-run of $name: $(printf '%s\n' "$out" | grep -c 'npm notice [0-9.]*[kM]\?B ') files, no warnings"
  fi
done
exit $status
