"""Where ctx keeps its files: the data dir (overridable) and the runtime dir."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import platformdirs

from engine.errors import NotAStore

APP = "ctx"
ENV_HOME = "CTX_HOME"


def data_dir(override: str | os.PathLike[str] | None = None) -> Path:
    """The data directory: the flag value, else $CTX_HOME, else the platform user data dir."""
    if override:
        return Path(override).expanduser().resolve()
    env = os.environ.get(ENV_HOME)
    if env:
        return Path(env).expanduser().resolve()
    return Path(platformdirs.user_data_dir(APP, appauthor=False)).resolve()


def default_key_file() -> Path:
    """Where ctx looks for a passphrase by itself when neither CTX_PASSPHRASE nor
    CTX_KEY_FILE is set: ``keyfile`` in the user config dir (``~/.config/ctx/keyfile``
    on Linux), the owner-only file `make run` makes on a machine without a keychain."""
    return Path(platformdirs.user_config_dir(APP, appauthor=False)) / "keyfile"


def init_command(root: Path) -> str:
    """The command that makes a store at ``root``: `ctx init`, with the --data-dir it needs
    when ``root`` is not the data dir a plain `ctx` command picks."""
    return store_command(root, "init")


def store_command(root: Path, rest: str) -> str:
    """`ctx REST` acting on the store at ``root``, with the --data-dir it needs when
    ``root`` is not the data dir a plain `ctx` command picks."""
    import shlex

    if Path(root).resolve() == data_dir():
        return f"ctx {rest}"
    return f"ctx --data-dir {shlex.quote(str(root))} {rest}"


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) readable by the owner alone."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if os.name == "posix":
        os.chmod(path, 0o700)
    return path


def claim_dir(path: Path) -> str | None:
    """Make ``path`` the owner-only folder of a new store, creating it if missing.

    A folder shared with others (sticky, or writable by others, as /tmp is) or owned
    by someone else is refused as it is (NotAStore): making it owner-only would take it
    from them. A folder of the user's own that others may read is made owner-only, and
    the note returned says so (the caller shows it: never silently).
    """
    try:
        st = path.stat()
    except FileNotFoundError:
        ensure_private_dir(path)
        return None
    if os.name != "posix":
        return None
    mode = stat.S_IMODE(st.st_mode)
    if mode & (stat.S_ISVTX | 0o002) or st.st_uid != os.getuid():
        whose = "shared with other users" if mode & (stat.S_ISVTX | 0o002) else \
            "owned by another user"
        raise NotAStore(f"{path} is a folder {whose} (mode {mode:o}): a store needs a folder "
                        "of its own, readable by you alone, and ctx will not change this one; "
                        f"pick a new folder, for example --data-dir {path / 'ctx'}")
    if mode & 0o077:
        os.chmod(path, 0o700)
        return (f"{path} was readable by others (mode {mode:o}); it is now owner-only (700), "
                "as a store's folder must be")
    return None


def vault_path(root: Path) -> Path:
    return root / "vault.db"


def vectors_path(root: Path) -> Path:
    return root / "vectors"


def snapshot_path(root: Path) -> Path:
    return root / "vectors.snap"


def keyfile_path(root: Path) -> Path:
    return root / "key.json"


def config_path(root: Path) -> Path:
    return root / "config.toml"


def lock_path(root: Path) -> Path:
    return root / "engine.lock"


def harden(path: Path) -> None:
    """Make ``path`` (a file, or a folder and everything in it) owner-only, whatever
    the umask was when its files were made. Links are left alone."""
    if os.name != "posix":
        return
    try:
        top = path.lstat()
    except OSError:
        return
    if stat.S_ISREG(top.st_mode):
        _owner_only(path, top.st_mode, 0o600)
        return
    if not stat.S_ISDIR(top.st_mode):
        return
    _owner_only(path, top.st_mode, 0o700)
    for dirpath, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            p = Path(dirpath) / name
            try:
                st = p.lstat()
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                _owner_only(p, st.st_mode, 0o700)
            elif stat.S_ISREG(st.st_mode):
                _owner_only(p, st.st_mode, 0o600)


def _owner_only(path: Path, mode: int, want: int) -> None:
    if mode & 0o077:
        try:
            os.chmod(path, want)
        except OSError:
            pass


def disk_full(path: Path, reserve: int = 1 << 20) -> bool:
    """Whether the file system holding ``path`` has less than ``reserve`` bytes free."""
    try:
        st = os.statvfs(path)
    except (OSError, AttributeError):
        return False
    return st.f_bavail * st.f_frsize < reserve


def fsync_path(path: Path) -> None:
    """Make ``path`` (a file, or a folder's entries) durable on disk. A folder is synced
    on POSIX only (Windows cannot open one, and makes renames durable by itself)."""
    if os.name != "posix":
        if path.is_dir():
            return
        fd = os.open(path, os.O_RDWR)
    else:
        fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
