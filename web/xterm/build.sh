#!/usr/bin/env bash
# Rebuilds web/static/vendor/xterm/ from the lockfile: exactly the files
# kubelab serves, with xterm.js's licence. Run from anywhere; needs npm.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/../static/vendor/xterm"
cd "$here"
npm ci --ignore-scripts --no-audit --no-fund
rm -rf "$out"
mkdir -p "$out"
cp node_modules/@xterm/xterm/lib/xterm.js "$out/xterm.js"
cp node_modules/@xterm/xterm/css/xterm.css "$out/xterm.css"
cp node_modules/@xterm/xterm/LICENSE "$out/LICENSE"
cp node_modules/@xterm/addon-fit/lib/addon-fit.js "$out/addon-fit.js"
rm -rf node_modules
echo "vendored @xterm/xterm $(node -p 'require("./package-lock.json").packages["node_modules/@xterm/xterm"].version') into $out"
