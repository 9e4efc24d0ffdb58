#!/bin/sh
# The release's uninstall check (macOS and Linux jobs): set up everything ctx's uninstall
# must undo, as a user would have it, then uninstall and check that none of it is left.
#
#   packaging/check_uninstall.sh INSTALLED_AT CTX CTX_APP
#
# INSTALLED_AT: the installed app (ctx.app, or the unpacked bundle folder); CTX and
# CTX_APP: its two executables. Sets up: a store (headless passphrase), the agents' hooks
# and MCP entries, a login item that starts CTX_APP, and a running `ctx serve`. Then
# `ctx uninstall-integrations --installed-at INSTALLED_AT` must stop the engine, remove the
# login item, the hooks and entries (and the agent files ctx made: nothing else is in
# them), and leave the user's data. Needs python3 with this checkout importable (the
# login item is made through ipc.login_item, as the app's Settings makes it).
set -eu
at=$1 ctx=$2 app=$3
here=$(cd "$(dirname "$0")/.." && pwd)
fail() { printf 'check_uninstall: %s\n' "$*" >&2; exit 1; }
export CTX_PASSPHRASE="${CTX_PASSPHRASE:-uninstall check passphrase}"
log=$(mktemp -d)

"$ctx" init --no-keychain
"$ctx" hook install
PYTHONPATH="$here" python3 -c 'import sys
from ipc.login_item import Autostart
item = Autostart(command=[sys.argv[1]])
item.enable()
assert item.enabled(), item.path
print(f"login item: {item.path}")' "$app" | tee "$log/login.txt"
login=$(sed -n 's/^login item: //p' "$log/login.txt")
[ -e "$login" ] || fail "no login item was made at $login"
"$ctx" serve > "$log/serve.txt" 2>&1 &
serve=$!
i=0
until grep -q '^ctx: serving' "$log/serve.txt"; do
    i=$((i + 1)); [ "$i" -lt 120 ] || fail "ctx serve did not start: $(cat "$log/serve.txt")"
    kill -0 "$serve" 2>/dev/null || fail "ctx serve exited: $(cat "$log/serve.txt")"
    sleep 1
done

"$ctx" uninstall-integrations --installed-at "$at" | tee "$log/uninstall.txt"
grep -q 'stopped the ctx engine' "$log/uninstall.txt" || fail "the engine was not stopped"
grep -q 'removed the login item' "$log/uninstall.txt" || fail "the login item was not removed"
grep -q 'removed the claude SessionStart hook' "$log/uninstall.txt" || fail "the hook stayed"
i=0
while kill -0 "$serve" 2>/dev/null; do
    i=$((i + 1)); [ "$i" -lt 60 ] || fail "ctx serve (pid $serve) still runs"
    sleep 1
done
[ ! -e "$login" ] || fail "the login item $login is left"
for f in "$HOME/.claude/settings.json" "$HOME/.claude.json" "$HOME/.codex/config.toml"; do
    [ ! -e "$f" ] || ! grep -q 'hook session-start\|mcp_servers.ctx\|"ctx"' "$f" ||
        fail "ctx's entry is left in $f"
    [ ! -e "$f.ctx-backup" ] || fail "$f.ctx-backup is left"
done
grep -q 'your data is kept in' "$log/uninstall.txt" || fail "the data dir was not kept"
echo "check_uninstall: engine stopped, login item, hooks and entries removed, data kept"
