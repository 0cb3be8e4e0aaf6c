#!/usr/bin/env bash
# Builds bin/gdrcheck with the version and commit stamped in.
# Usage: scripts/build.sh [output]   (run from anywhere inside the repository)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
out=${1:-bin/gdrcheck}
commit=$(git rev-parse --short=12 HEAD)
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then commit="$commit-dirty"; fi
version=$(git describe --tags --always 2>/dev/null || echo devel)
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}"
go build -trimpath -ldflags "-X main.version=$version -X main.commit=$commit" -o "$out" ./cmd/gdrcheck
echo "built $out ($version, $commit)"
