#!/usr/bin/env bash
# The main job: ctx headless on the default store (the platform's user data dir, or
# $CTX_HOME). It ingests this project's docs as a sample, answers a query, then
# serves sibling processes over ZeroMQ until stopped (Ctrl-C).
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

$CTX ingest README.md docs
$CTX build "How does a sibling process call build_context?" --budget 400
$CTX status
echo "ctx: serving over ZeroMQ (Ctrl-C to stop)" >&2
exec $CTX serve
