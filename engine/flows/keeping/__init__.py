"""Keeping the data: backups, restore, export, key changes, deleting, repair, health.

- ``backup`` (with ``backup_partials``, the files a backup leaves while it runs),
  ``restore``, ``export``  keeping the data;
- ``key_changes`` key changes: the rotation, which touches the data, and the public
  ``change_passphrase``, ``use_passphrase``, ``use_keychain``, ``renew_recovery_key``, each
  the orchestrated twin of ``engine.crypto.key_changes``' function of the same name;
- ``deleting``  what a delete names, and the job that removes it everywhere;
  ``compaction`` giving space back;
- ``vector_rebuild``  rebuilding the vector store from the vault;
- ``health``    the engine's status (store counts, vectors, model, jobs, alerts).
"""
