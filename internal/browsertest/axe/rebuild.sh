#!/usr/bin/env bash
# Rebuilds the vendored axe-core (axe.min.js and its licence) from the
# lockfile. The browser tests embed and inject it; kubelab serves none of
# it. Run from anywhere; needs npm.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
npm ci --ignore-scripts --no-audit --no-fund
cp node_modules/axe-core/axe.min.js axe.min.js
cp node_modules/axe-core/LICENSE LICENSE
rm -rf node_modules
echo "vendored axe-core $(node -p 'require("./package-lock.json").packages["node_modules/axe-core"].version')"
