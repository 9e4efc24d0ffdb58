"""Tests of engine/store/vault/ (the SQLCipher vault and its SQL)."""
