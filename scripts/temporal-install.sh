#!/usr/bin/env bash
# The official Temporal CLI (`temporal server start-dev` is the dev server the tests run), built
# from its source through the Go module proxy and kept in ~/.cache, so a machine builds it once:
# test/workflows/server.test.ts uses it. `.complete` is written last, so a broken build is redone.
set -euo pipefail
version="${TEMPORAL_CLI_VERSION:-v1.5.1}"
dir="$HOME/.cache/paperlink-temporal/$version"
if [ -f "$dir/.complete" ]; then
  echo "temporal $version: $dir/temporal (cached)"
  exit 0
fi
rm -rf "$dir"
mkdir -p "$dir"
export GOFLAGS="${GOFLAGS:-} -mod=mod"
GOBIN="$dir" go install "github.com/temporalio/cli/cmd/temporal@$version"
"$dir/temporal" --version
touch "$dir/.complete"
