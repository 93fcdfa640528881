#!/usr/bin/env bash
# Rebuilds web/static/fonts/ from the lockfile: Noto Sans Thai's Thai
# subset (regular and bold, woff2), its licence, and fonts.css, whose
# unicode-range makes browsers fetch the font only for Thai text. The
# fonts' URLs carry the package's version, so they are cached for good.
# Run from anywhere; needs npm.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/../static/fonts"
cd "$here"
npm ci --ignore-scripts --no-audit --no-fund
pkg=node_modules/@fontsource/noto-sans-thai
version=$(node -p "require('./$pkg/package.json').version")
rm -rf "$out"
mkdir -p "$out"
cp "$pkg/LICENSE" "$out/LICENSE"
{
	echo "/* Noto Sans Thai $version (SIL Open Font License 1.1, see LICENSE), Thai"
	echo "   subset only: browsers fetch it for Thai text alone. Made by web/fonts/rebuild.sh. */"
	for weight in 400 700; do
		file="noto-sans-thai-thai-$weight-normal.woff2"
		cp "$pkg/files/$file" "$out/$file"
		range=$(grep -A7 "noto-sans-thai-thai-$weight-normal \*/" "$pkg/$weight.css" | sed -n 's/.*unicode-range: \(.*\);/\1/p')
		echo "@font-face { font-family: \"Noto Sans Thai\"; font-style: normal; font-weight: $weight; font-display: swap;"
		echo "  src: local(\"Noto Sans Thai\"), url(\"$file?v=$version\") format(\"woff2\"); unicode-range: $range; }"
	done
} >"$out/fonts.css"
rm -rf node_modules
echo "vendored @fontsource/noto-sans-thai $version into $out"
