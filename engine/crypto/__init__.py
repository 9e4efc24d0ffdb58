"""Keys and encryption: the wrapped data key and the keyed vector rotation.

- ``keys``: the data key (256 random bits, created once), kept wrapped by the OS keychain
  or a passphrase (scrypt, AES-256-GCM) in key.json;
- ``recovery``: the recovery key, shown once, that unlocks the data key by itself;
- ``key_changes``: a new passphrase, keychain <-> passphrase, a new recovery key: each
  rewraps the same data key in one atomic rename (the orchestration with the open store
  is ``engine.flows.keeping.key_changes``);
- ``rotation``: the secret orthogonal rotation of stored vectors, derived from the key;
- ``config``: the [keys] section (the passphrase KDF's cost).
"""
