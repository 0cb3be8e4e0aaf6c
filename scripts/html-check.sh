#!/usr/bin/env bash
# Checks report.html and fleet.html files in a real browser: each is opened in headless
# Chromium (tools/htmlcheck, over the DevTools pipe), which fails on any
# console error, uncaught exception or network request, and a full-page
# screenshot is saved for a person to look at.
#
# Usage: scripts/html-check.sh [FILE.html | DOSSIER_DIR | FLEET_OUT_DIR ...]
#   default: the golden fixture pages, internal/report/html/testdata/*.html
#   (the dossiers' and fleet-planted.html)
#   SHOTS=DIR        where the screenshots go (default: ${TMPDIR:-/tmp}/html-check)
#   CHROMIUM=PATH    the browser (default: chromium, chromium-browser or google-chrome on PATH)
#   MAX_HEIGHT=N     screenshot only each page's first N CSS pixels (the docs' images)
#   REQUIRE_BROWSER=1  fail instead of skipping when no browser is installed
#
# Without a browser it says so and exits 0 (CI has none), unless
# REQUIRE_BROWSER=1. Install one on Debian with: apt-get install chromium
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
shots=${SHOTS:-${TMPDIR:-/tmp}/html-check}
mkdir -p "$shots"
bin=$(mktemp -d)/htmlcheck
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./tools/htmlcheck

browser=${CHROMIUM:-}
if [ -z "$browser" ]; then
  for b in chromium chromium-browser google-chrome google-chrome-stable; do
    if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
  done
fi
if [ -z "$browser" ]; then
  if [ "${REQUIRE_BROWSER:-0}" = 1 ]; then
    echo "html-check: no Chromium found (apt-get install chromium, or set CHROMIUM)" >&2
    exit 2
  fi
  echo "html-check: SKIP: no Chromium found (apt-get install chromium, or set CHROMIUM)"
  exit 0
fi

files=()
if [ $# -eq 0 ]; then
  files=(internal/report/html/testdata/*.html)
else
  for a in "$@"; do
    if [ -d "$a" ]; then
      # a dossier (report.html) or a gdrcheck fleet --out folder (fleet.html)
      found=0
      for p in "$a/report.html" "$a/fleet.html"; do
        if [ -f "$p" ]; then files+=("$p"); found=1; fi
      done
      if [ "$found" -eq 0 ]; then files+=("$a/report.html"); fi
    else
      files+=("$a")
    fi
  done
fi

fail=0
for f in "${files[@]}"; do
  name=$(basename "$(dirname "$f")")-$(basename "$f" .html)
  case "$(basename "$f")" in report.html | fleet.html) ;; *) name=$(basename "$f" .html) ;; esac
  if ! "$bin" -browser "$browser" -max-height "${MAX_HEIGHT:-0}" -screenshot "$shots/$name.png" "$f"; then
    fail=1
  fi
done
if [ "$fail" -ne 0 ]; then
  echo "html-check: FAIL" >&2
  exit 1
fi
echo "html-check: OK: ${#files[@]} page(s); screenshots in $shots"
