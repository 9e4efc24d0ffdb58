#!/bin/sh
# Install the .deb into this clean Debian system with plain `dpkg -i` (no `apt -f`), check it
# runs, run the smoke test against the installed files, remove it, and check that nothing
# of it is left. Run as root in a fresh container or chroot (the release workflow: a
# debian image); it installs what it needs with apt-get.
#
#   packaging/linux/check_deb_install.sh dist/ctx_VERSION_amd64.deb
#
# 1. Only the packages the .deb declares (Depends), then `dpkg -i`: it fails on a missing or
#    misnamed dependency. Every library a bundled file loads must then resolve (ldd, with the
#    bundle's own folders searched first), before any other package is installed.
# 2. `dpkg --purge`, then the test tools (python3, pytest, pyzmq, Xvfb, trayer), a snapshot
#    of the file system, `dpkg -i` again, the smoke test as an ordinary user (CLI, serve,
#    tray under Xvfb, licences, install-user.sh), and what the prerm must undo: that user's
#    agent hooks and a running `ctx serve`.
# 3. `dpkg --purge`: the prerm reports what it undid; /opt/ctx and every other file the
#    package or the app put outside the user's data dir are gone.
set -eu
deb=$(readlink -f "$1")
repo=$(cd "$(dirname "$0")/../.." && pwd)
export DEBIAN_FRONTEND=noninteractive
say() { printf '== %s\n' "$*"; }
fail() { printf 'check_deb_install: %s\n' "$*" >&2; exit 1; }

apt-get update -qq
deps=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed -e 's/|.*//' -e 's/(.*)//' -e 's/ //g' |
       grep -v '^$' | tr '\n' ' ')
say "the declared dependencies only: $deps"
# shellcheck disable=SC2086  # one package per word
apt-get install -y -qq --no-install-recommends $deps >/dev/null
say "dpkg -i $(basename "$deb")"
dpkg -i "$deb"
dirs=$(find /opt/ctx -name '*.so*' -type f -printf '%h\n' | sort -u | tr '\n' ':')
missing=$(find /opt/ctx -type f \( -name '*.so*' -o -name ctx \) -print | while read -r f; do
    LD_LIBRARY_PATH="$dirs" ldd "$f" 2>/dev/null | grep 'not found' | sed "s|^|$f: |" || true
done)
[ -z "$missing" ] || fail "libraries no installed package provides:
$missing"
say "every bundled library resolves; $(ctx --version) runs from PATH"
out=$(ctx-app 2>&1) && fail "ctx-app without a display exited 0: $out"
echo "$out" | grep -q 'no display' || fail "ctx-app without a display said: $out"
dpkg --purge ctx >/dev/null
[ ! -e /opt/ctx ] || fail "/opt/ctx is left after dpkg --purge"

say "test tools (after the check above, so that they hide no missing dependency)"
apt-get install -y -qq --no-install-recommends python3 python3-pytest python3-pytest-timeout \
    python3-zmq python3-platformdirs xvfb trayer x11-utils xauth procps >/dev/null
id tester >/dev/null 2>&1 || useradd --create-home --shell /bin/sh tester
id bystander >/dev/null 2>&1 || useradd --create-home --shell /bin/sh bystander  # never runs ctx
snapshot() {
    find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp \
        -o -path /var/tmp -o -path /var/cache -o -path /var/lib/apt -o -path /var/log \
        -o -path /var/lib/dpkg -o -path /home -o -path /root -o -path "$repo" \) -prune \
        -o -print | sort
}
snapshot > /tmp/ctx-before.txt
dpkg -i "$deb"
say "the smoke test against /opt/ctx, as user tester"
work=$(mktemp -d /tmp/ctx-smoke.XXXXXX)
cp -r "$repo/tests" "$repo/engine" "$repo/ipc" "$repo/pyproject.toml" "$work/"  # readable
chown -R tester "$work"
if python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    runuser -u tester -- env -i HOME=/home/tester PATH=/usr/bin:/bin LANG=C.UTF-8 \
        CTX_DIST_BUNDLE=/opt/ctx PYTHONDONTWRITEBYTECODE=1 \
        sh -c "cd '$work' && python3 -m pytest -c tests/dist/pytest-installed.ini --rootdir . \
               -m dist tests/dist/test_bundle_smoke.py tests/dist/test_bundle_install.py"
else  # the oldest system the README names (Ubuntu 22.04) has Python 3.10: the tests need
      # 3.11, so the same steps in shell: init, ingest, a context within budget, search
    say "python3 is $(python3 -V 2>&1 | cut -d' ' -f2) here: the smoke test's shell form"
    smoke=$(mktemp -d /tmp/ctx-home.XXXXXX)
    chown tester "$smoke"
    runuser -u tester -- env -i HOME="$smoke" PATH=/usr/bin:/bin LANG=C.UTF-8 \
        CTX_PASSPHRASE=smoke sh -eu -c '
        mkdir "$HOME/docs"
        printf "# Retry policy\n\nThe sync client retries three times with backoff.\n" \
            > "$HOME/docs/retry.md"
        ctx init >/dev/null
        ctx ingest "$HOME/docs" >/dev/null
        ctx build "how often does the client retry?" --budget 120 --format json > "$HOME/p.json"
        python3 - "$HOME/p.json" <<PY
import json, sys
p = json.load(open(sys.argv[1]))
assert 0 < p["total_tokens"] <= 120, p
assert any(i["source"].endswith("retry.md") for i in p["items"]), p
PY
        ctx search "retry policy" | grep -q retry.md'
    pkill -u tester -f /opt/ctx/ || true  # the background engine the commands started
    sleep 2
fi
say "what the prerm must undo: tester's agent hooks and a running ctx serve"
as_tester() {
    runuser -u tester -- env -i HOME=/home/tester PATH=/usr/bin:/bin LANG=C.UTF-8 \
        CTX_PASSPHRASE=check "$@"
}
as_tester ctx init >/dev/null
as_tester ctx hook install >/dev/null
grep -q 'hook session-start' /home/tester/.claude/settings.json || fail "no hook installed"
as_tester setsid ctx serve >/tmp/ctx-serve.log 2>&1 &
i=0
until grep -q '^ctx: serving' /tmp/ctx-serve.log; do
    i=$((i + 1)); [ "$i" -lt 600 ] || fail "ctx serve did not start: $(cat /tmp/ctx-serve.log)"
    sleep 0.2
done
say "dpkg --purge ctx"
dpkg --purge ctx | tee /tmp/ctx-purge.log
grep -q 'user tester: stopped the ctx engine' /tmp/ctx-purge.log ||
    fail "the prerm did not stop tester's ctx serve"
grep -q 'user tester: removed the claude SessionStart hook' /tmp/ctx-purge.log ||
    fail "the prerm did not remove tester's hook"
! pgrep -u tester -f /opt/ctx/ctx >/dev/null || fail "a ctx process of tester still runs"
settings=/home/tester/.claude/settings.json codex=/home/tester/.codex/config.toml
[ ! -e $settings ] || ! grep -q 'hook session-start' $settings || fail "the hook is left"
[ ! -e $codex ] || ! grep -q 'mcp_servers.ctx' $codex || fail "the Codex entry is left"
[ -z "$(find /home/tester -name '*.ctx-backup')" ] || fail "*.ctx-backup files are left"
# an account that never ran ctx: the prerm made nothing for it (no runtime folder)
[ ! -e "/tmp/runtime-$(id -u bystander)" ] || fail "the prerm made a runtime dir for bystander"
[ -z "$(find /home/bystander -newer /tmp/ctx-before.txt)" ] || fail "bystander's home changed"
! grep -q 'user bystander' /tmp/ctx-purge.log || fail "the prerm ran for bystander"
snapshot > /tmp/ctx-after.txt
left=$(comm -13 /tmp/ctx-before.txt /tmp/ctx-after.txt)
[ -z "$left" ] || fail "left behind after dpkg --purge:
$left"
[ -d /home/tester/.local/share/ctx ] || fail "the user's data dir went too"
say "installed, ran, removed: nothing left outside the user's data dir"
