"""Backups: the encrypted backup file's format (``format``) and the app's schedule for
taking them (``config``, ``schedule``). Taking, checking and restoring a backup are
orchestration (``engine.flows.keeping.backup``, ``engine.flows.keeping.restore``)."""
