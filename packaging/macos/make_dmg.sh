#!/usr/bin/env bash
# Pack dist/ctx.app into a compressed .dmg with an /Applications link.
#   packaging/macos/make_dmg.sh VERSION   ->  dist/ctx-VERSION-macos-ARCH.dmg
set -euo pipefail
version="$1"
arch="$(uname -m)"
stage="build/dmg"
rm -rf "$stage" && mkdir -p "$stage"
cp -R dist/ctx.app "$stage/"
ln -s /Applications "$stage/Applications"
hdiutil create -volname "ctx $version" -srcfolder "$stage" -ov -format UDZO \
    "dist/ctx-$version-macos-$arch.dmg"
echo "dist/ctx-$version-macos-$arch.dmg"
