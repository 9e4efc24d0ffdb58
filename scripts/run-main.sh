#!/usr/bin/env bash
# The main job: ctx on the default store (the platform's user data dir, or $CTX_HOME).
# With a display ($DISPLAY or $WAYLAND_DISPLAY) it starts the tray app; without one it
# stays headless. Either way it ingests this project's docs as a sample, answers a
# query, then serves sibling processes over ZeroMQ until stopped (Ctrl-C or Quit).
# $VENV picks the virtualenv (default .venv, which `make run` sets up).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
CTX="$VENV/bin/ctx"
PY="$VENV/bin/python"

# Headless machines have no keychain: unless a passphrase is given, keep one in an
# owner-only key file, where every later ctx command looks for it by itself
# (engine.paths.default_key_file: ~/.config/ctx/keyfile; ctx warns that it is for
# headless use only).
keyfile=""
if [ -z "${CTX_PASSPHRASE:-}" ] && [ -z "${CTX_KEY_FILE:-}" ]; then
  if ! "$PY" -c 'import sys; from engine import keychain_available as k; sys.exit(0 if k() else 1)'; then
    keyfile=$("$PY" -c 'from engine.paths import default_key_file; print(default_key_file())')
    if [ ! -f "$keyfile" ]; then
      mkdir -p "$(dirname "$keyfile")"
      (umask 077; "$PY" -c 'import secrets; print(secrets.token_urlsafe(32))' > "$keyfile")
      echo "ctx: no OS keychain here; created a headless key file at $keyfile" >&2
    fi
    export CTX_KEY_FILE="$keyfile"
  fi
fi

QUERY="How does a sibling process call build_context?"

next_steps() {
  local bin
  bin=$(cd "$VENV/bin" && pwd)
  cat >&2 <<EOF

ctx: stopped; nothing of it is left running. To go on from a terminal:
  export PATH="$bin:\$PATH"
  echo "Retries: three tries, then give up." | ctx ingest - --title "retry policy"
  ctx search "retry policy"       # ranked hits, with paths and line ranges
  ctx build "what did we decide about retries?" --budget 1500
  ctx ingest ~/notes              # your own files or folders (any path)
  ctx serve                       # serve sibling processes again (or: ctx app)
EOF
  if [ -n "$keyfile" ]; then
    echo "ctx finds the store's key in $keyfile by itself (no keychain here): keep that file, and the recovery key, safe." >&2
  fi
}

# A new store is made by `ctx init`, which shows its recovery key once; a store made
# before without one is offered one.
has_store() { "$PY" -c 'import sys; from engine import probe_store; sys.exit(0 if probe_store().exists else 1)'; }
offer_recovery_key() {
  if ! "$CTX" status --json | "$PY" -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["status"].get("recovery_key") else 1)'; then
    echo "ctx: this store has NO recovery key: \`ctx key recovery\` makes one (shown once; keep it off this computer)" >&2
  fi
}

# Where a display exists, the tray app hosts the engine (and serves siblings over
# ZeroMQ exactly as `ctx serve` does); the sample goes through it.
if [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; then
  echo "ctx: starting the tray app (quit from its menu, or Ctrl-C)" >&2
  "$CTX" app --ingest README.md --ingest docs &
  app=$!
  trap 'kill -TERM $app 2>/dev/null || true' INT TERM
  for _ in $(seq 1 240); do  # up to 2 min: the first start creates the store
    if "$CTX" app --status 2>/dev/null | "$PY" -c \
        'import json,sys; s=json.load(sys.stdin); j=s.get("jobs",{}); sys.exit(0 if s.get("state")=="ready" and j.get("total") and not j["active"] and not j["pending"] else 1)'; then
      "$CTX" build "$QUERY" --budget 400
      "$CTX" status
      break
    fi
    kill -0 $app 2>/dev/null || break
    sleep 0.5
  done
  status=0
  wait $app || status=$?
  next_steps
  exit $status
fi

# Headless: the server owns the store from the start, and the sample goes through it
# (a command run before it would start a background engine that holds the store).
if ! has_store; then
  "$CTX" init
fi
"$CTX" serve &
server=$!
stop() { kill -TERM $server 2>/dev/null || true; }
trap stop INT TERM
trap 'stop; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do  # up to 60 s: the first start creates the store
  if "$PY" -c 'import sys; from ipc.remote import connect; sys.exit(0 if connect() else 1)' \
      2>/dev/null; then
    break
  fi
  kill -0 $server 2>/dev/null || { wait $server; exit $?; }  # it could not start: its error stands
  sleep 0.1
done
"$CTX" ingest README.md docs
"$CTX" build "$QUERY" --budget 400
"$CTX" status
offer_recovery_key
echo "ctx: serving over ZeroMQ (Ctrl-C to stop)" >&2
status=0
while :; do  # a trapped Ctrl-C interrupts `wait`: wait again until the server has ended
  if wait $server; then status=0; break; else status=$?; fi
  kill -0 $server 2>/dev/null && continue
  if [ $status -gt 128 ]; then  # maybe the trap's interruption: collect the real status
    if wait $server 2>/dev/null; then status=0; else s=$?; [ $s -eq 127 ] || status=$s; fi
  fi
  break
done
trap - EXIT
next_steps
exit $status
