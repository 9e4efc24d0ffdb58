#!/usr/bin/env bash
# The main job: ctx on the default store (the platform's user data dir, or $CTX_HOME).
# With a display ($DISPLAY or $WAYLAND_DISPLAY) it starts the tray app; without one it
# stays headless. Either way it ingests this project's docs as a sample, answers a
# query, then serves sibling processes over ZeroMQ until stopped (Ctrl-C or Quit).
set -euo pipefail
cd "$(dirname "$0")/.."
CTX=.venv/bin/ctx

# Headless machines have no keychain: unless a passphrase is given, keep one in an
# owner-only key file (ctx warns that this is for headless use only).
if [ -z "${CTX_PASSPHRASE:-}" ] && [ -z "${CTX_KEY_FILE:-}" ]; then
  if ! .venv/bin/python -c 'import sys; from engine.crypto.keys import keychain_available as k; sys.exit(0 if k() else 1)'; then
    keyfile="${XDG_CONFIG_HOME:-$HOME/.config}/ctx/keyfile"
    if [ ! -f "$keyfile" ]; then
      mkdir -p "$(dirname "$keyfile")"
      (umask 077; .venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(32))' > "$keyfile")
      echo "ctx: no OS keychain here; created a headless key file at $keyfile" >&2
    fi
    export CTX_KEY_FILE="$keyfile"
  fi
fi

QUERY="How does a sibling process call build_context?"

# Where a display exists, the tray app hosts the engine (and serves siblings over
# ZeroMQ exactly as `ctx serve` does); the sample goes through it.
if [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; then
  echo "ctx: starting the tray app (quit from its menu, or Ctrl-C)" >&2
  $CTX app --ingest README.md --ingest docs &
  app=$!
  trap 'kill -TERM $app 2>/dev/null || true' INT TERM
  for _ in $(seq 1 240); do  # up to 2 min: the first start creates the store
    if $CTX app --status 2>/dev/null | .venv/bin/python -c \
        'import json,sys; s=json.load(sys.stdin); j=s.get("jobs",{}); sys.exit(0 if s.get("state")=="ready" and j.get("total") and not j["active"] and not j["pending"] else 1)'; then
      $CTX build "$QUERY" --budget 400
      $CTX status
      break
    fi
    kill -0 $app 2>/dev/null || break
    sleep 0.5
  done
  wait $app
  exit $?
fi

$CTX ingest README.md docs
$CTX build "$QUERY" --budget 400
$CTX status
echo "ctx: serving over ZeroMQ (Ctrl-C to stop)" >&2
exec $CTX serve
