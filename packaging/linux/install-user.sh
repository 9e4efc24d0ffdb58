#!/bin/sh
# Install the unpacked ctx bundle for the current user (no root): links `ctx` and
# `ctx-app` into ~/.local/bin, the menu entry and icon into ~/.local/share.
# Run from the unpacked folder:  ./install-user.sh        Remove:  ./install-user.sh --remove
# --remove first undoes what ctx set up outside its data dir (a running ctx, the login
# item, agent hooks and MCP entries pointing at this folder) and says what it removed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin="${XDG_BIN_HOME:-$HOME/.local/bin}"
share="${XDG_DATA_HOME:-$HOME/.local/share}"
if [ "${1:-}" = "--remove" ]; then
    "$here/ctx" uninstall-integrations --installed-at "$here" \
        --installed-at "$bin/ctx" --installed-at "$bin/ctx-app" ||
        echo "install-user.sh: ctx could not undo every integration (see above)" >&2
    rm -f "$bin/ctx" "$bin/ctx-app" "$share/applications/ctx.desktop" \
          "$share/icons/hicolor/256x256/apps/ctx.png" "$share/icons/hicolor/scalable/apps/ctx.svg"
    echo "ctx removed from $bin and $share (the bundle folder and your data are left)"
    exit 0
fi
mkdir -p "$bin" "$share/applications" "$share/icons/hicolor/256x256/apps" \
         "$share/icons/hicolor/scalable/apps"
ln -sf "$here/ctx" "$bin/ctx"
ln -sf "$here/ctx-app" "$bin/ctx-app"
# The Exec path quoted as the Desktop Entry Specification asks (it may hold spaces):
# inside the quotes \ " ` $ are escaped, and each backslash doubled again for the
# string escapes applied first; % is written %%.
exec_path=$(printf '%s' "$here/ctx-app" |
    sed -e 's/\\/\\\\\\\\/g' -e 's/["`$]/\\\\&/g' -e 's/%/%%/g')
while IFS= read -r line; do
    case "$line" in
        Exec=*) printf 'Exec="%s"\n' "$exec_path" ;;
        *) printf '%s\n' "$line" ;;
    esac
done < "$here/share/ctx.desktop" > "$share/applications/ctx.desktop"
cp "$here/share/ctx.png" "$share/icons/hicolor/256x256/apps/ctx.png"
cp "$here/share/ctx.svg" "$share/icons/hicolor/scalable/apps/ctx.svg"
echo "ctx installed: $bin/ctx, $bin/ctx-app and a menu entry"
case ":${PATH:-}:" in
    *":$bin:"*) ;;
    *)  # most systems put ~/.local/bin on PATH at the next login, not in this shell
        echo "$bin is not on your PATH yet, so \`ctx\` is not found in this shell. Now:"
        echo "    export PATH=\"$bin:\$PATH\""
        echo "(or run $bin/ctx; a new login usually adds it, else add that line to ~/.profile)" ;;
esac
