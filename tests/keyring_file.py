"""A keyring backend in a JSON file, for tests: a real ``keyring`` backend that processes
share (``PYTHON_KEYRING_BACKEND=tests.keyring_file.FileKeyring``, the file named by
``CTX_TEST_KEYRING``), so that no test touches the user's real keychain."""

from __future__ import annotations

import json
import os
from pathlib import Path

from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError

BACKEND = "tests.keyring_file.FileKeyring"
ENV = "CTX_TEST_KEYRING"


class FileKeyring(KeyringBackend):
    priority = 1

    @staticmethod
    def _path() -> Path:
        return Path(os.environ[ENV])

    def _load(self) -> dict[str, str]:
        try:
            return dict(json.loads(self._path().read_text(encoding="utf-8")))
        except FileNotFoundError:
            return {}

    def _save(self, data: dict[str, str]) -> None:
        tmp = self._path().with_suffix(".tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, self._path())

    def get_password(self, service: str, username: str) -> str | None:
        return self._load().get(f"{service}/{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        data = self._load()
        data[f"{service}/{username}"] = password
        self._save(data)

    def delete_password(self, service: str, username: str) -> None:
        data = self._load()
        if data.pop(f"{service}/{username}", None) is None:
            raise PasswordDeleteError("no such entry")
        self._save(data)


def entries() -> dict[str, str]:
    """What the test keychain holds (service/account -> secret)."""
    return FileKeyring()._load()
