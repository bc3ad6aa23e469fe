#!/usr/bin/env bash
# The suites that start Chromium or LibreOffice, again, in the other ways users' machines start
# them (`npm test` runs them once, with the Chromium this machine finds first: Debian's in CI):
#   npm       the Chromium inside the npm package @sparticuz/chromium, named by CHROMIUM_PATH
#   nobwrap   bubblewrap not working, so TEMPLATE_SANDBOX=auto prints without a sandbox: its
#             /usr/bin/bwrap is hidden behind /bin/false in a mount namespace of this run's own
#             (unshare and mount: root, as in CI)
# Usage: bash scripts/test-renderers.sh npm|nobwrap   (after `npm run build`). Each jest run ends
# with its "N passed, N failed" line; exits non-zero when a test failed.
set -euo pipefail
cd "$(dirname "$0")/.."
# the hostile suite alone first: its bombs run to their time budgets, which a suite beside it on a
# 2-core machine (veraPDF's Java, LibreOffice) would eat into; the rest two at a time
hostile=(test/templates/hostile.test.ts)
suites=(
  test/templates/programs.test.ts
  test/templates/html.test.ts
  test/templates/docx.test.ts
  test/templates/sandbox.test.ts
  test/templates/budgets.test.ts
  test/templates/standards.test.ts
  test/cli/render.test.ts
  test/cli/doctor.test.ts
)
export PAPERLINK_SKIP_TYPECHECK=1
run() {
  local status=0
  node scripts/test.js --runInBand "${hostile[@]}" || status=1
  node scripts/test.js "${suites[@]}" || status=1
  [ "$status" -eq 0 ] && echo "every printing suite passed" || echo "some printing suite failed: see above"
  return "$status"
}
case "${1:-}" in
  npm)
    CHROMIUM_PATH="$(node -e "import('@sparticuz/chromium').then((m) => m.default.executablePath()).then((p) => console.log(p))")"
    export CHROMIUM_PATH
    echo "Chromium of the npm package: $CHROMIUM_PATH"
    run
    ;;
  nobwrap)
    bwrap="$(command -v bwrap || true)"
    if [ -z "$bwrap" ]; then
      echo "bubblewrap is not installed here: the suites run as they are"
      run
      exit 0
    fi
    # shellcheck disable=SC2016 # expanded by the inner shell, in the new namespace
    exec unshare --mount --propagation private -- sh -c \
      'mount --bind /bin/false "$1" && echo "bubblewrap hidden behind /bin/false in this run" && exec bash "$2" run' \
      sh "$bwrap" "$PWD/scripts/test-renderers.sh"
    ;;
  run) run ;;
  *)
    echo "usage: bash scripts/test-renderers.sh npm|nobwrap" >&2
    exit 2
    ;;
esac
