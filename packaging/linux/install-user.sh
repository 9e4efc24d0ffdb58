#!/bin/sh
# Install the unpacked ctx bundle for the current user (no root): links `ctx` and
# `ctx-app` into ~/.local/bin, the menu entry and icon into ~/.local/share.
# Run from the unpacked folder:  ./install-user.sh        Remove:  ./install-user.sh --remove
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin="${XDG_BIN_HOME:-$HOME/.local/bin}"
share="${XDG_DATA_HOME:-$HOME/.local/share}"
if [ "${1:-}" = "--remove" ]; then
    rm -f "$bin/ctx" "$bin/ctx-app" "$share/applications/ctx.desktop" \
          "$share/icons/hicolor/256x256/apps/ctx.png" "$share/icons/hicolor/scalable/apps/ctx.svg"
    echo "ctx removed from $bin and $share (the bundle folder and your data are left)"
    exit 0
fi
mkdir -p "$bin" "$share/applications" "$share/icons/hicolor/256x256/apps" \
         "$share/icons/hicolor/scalable/apps"
ln -sf "$here/ctx" "$bin/ctx"
ln -sf "$here/ctx-app" "$bin/ctx-app"
sed "s|^Exec=ctx-app|Exec=$here/ctx-app|" "$here/share/ctx.desktop" > "$share/applications/ctx.desktop"
cp "$here/share/ctx.png" "$share/icons/hicolor/256x256/apps/ctx.png"
cp "$here/share/ctx.svg" "$share/icons/hicolor/scalable/apps/ctx.svg"
echo "ctx installed: $bin/ctx, $bin/ctx-app and a menu entry"
