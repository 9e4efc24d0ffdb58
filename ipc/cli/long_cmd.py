"""Long operations from the terminal: `ctx delete`, `ctx compact` and `ctx key rotate`
(when the background engine runs) follow their job's progress; `ctx stop` stops the
background engine of a data dir; commands that need the store closed (`ctx repair`,
`ctx key rotate --stop`) stop it first when asked (``--stop``) or offer to on a
terminal, and a ``store_locked`` error names the process holding the store.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from engine import EngineAPI, JobSnapshot, KeyChangeResult, StoreLocked
from ipc.cli.backend import open_backend, served, stop_command
from ipc.cli.output import emit_json, emit_result
from ipc.cli.progress import JobProgress, job_or_none
from ipc.cli.targets import delete_target

T = TypeVar("T")
# How long `ctx stop` waits for the engine to finish what it does and exit.
STOP_WAIT_S = 120.0


def follow(backend: EngineAPI, job_id: str) -> JobSnapshot | None:
    """Follow a job to its end, its progress on stderr; None when the user stopped
    waiting (Ctrl-C): the job goes on."""
    bar = JobProgress(describe=lambda jid: job_or_none(backend, jid))
    try:
        while True:
            snap = backend.job(job_id)
            bar.update(snap)
            if snap.final:
                bar.update(snap, force=True)
                return snap
            time.sleep(0.2)
    except KeyboardInterrupt:
        return None
    finally:
        bar.close()


def _still_running(backend: EngineAPI, job_id: str, what: str) -> int:
    """The user stopped waiting for a job: say where it goes on and how to see it."""
    if served(backend):
        print(f"ctx: stopped waiting; the {what} goes on in the background engine "
              f"(job {job_id}): `ctx status` shows its progress", file=sys.stderr)
    else:
        print(f"ctx: stopped; the {what} is finished the next time the store opens "
              "(what it removed so far is gone, the rest is hidden already)",
              file=sys.stderr)
    return 130


def cmd_delete(args: argparse.Namespace) -> int:
    backend = open_backend(args.data_dir, local_only=args.local)
    try:
        result = backend.delete(delete_target(args.source), wait=False)
        if args.no_wait:
            emit_json(result.to_dict()) if args.json else print(result.job)
            return 0
        snap = follow(backend, result.job) if result.job else None
        if result.job and snap is None:
            return _still_running(backend, result.job, "delete")
        if snap is not None and snap.state == "failed" and snap.error is not None:
            raise snap.error.to_error()
    finally:
        backend.close()
    if args.json:
        emit_json({**result.to_dict(), **({"chunks": snap.chunks} if snap else {})})
    else:
        tail = f" ({snap.chunks:,} chunks)" if snap is not None and snap.chunks else ""
        print(f"deleted {result.deleted} source(s){tail}")
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    from engine import CompactResult

    backend = open_backend(args.data_dir, local_only=args.local)
    try:
        job_id = backend.compact(wait=False).job
        snap = follow(backend, job_id)
        if snap is None:
            return _still_running(backend, job_id, "compaction")
        if snap.state == "failed" and snap.error is not None:
            raise snap.error.to_error()
    finally:
        backend.close()
    result = CompactResult(job_id, snap.bytes_total, snap.bytes)
    emit_result(result, args.json, f"compacted: {_mb(result.bytes_before)} before, "
                f"{_mb(result.bytes_after)} after "
                f"({_mb(result.bytes_before - result.bytes_after)} given back)")
    return 0


def rotate_online(args: argparse.Namespace, unlocked: Callable[..., Any]
                  ) -> KeyChangeResult | int | None:
    """`ctx key rotate` with the background engine running: the new key is made and
    wrapped here (``prepare_rotation``, unlocked as ``unlocked`` does: the passphrase
    never travels), then the engine rotates to it as a job that this follows. None when
    no engine runs (the caller rotates the closed store); 130 when the user stopped
    waiting (the rotation goes on)."""
    from engine import prepare_rotation
    from ipc.remote import connect

    remote = connect(Path(args.data_dir) if args.data_dir else None)
    if remote is None:
        return None
    try:
        for job in remote.jobs():
            if job.kind == "rotate" and not job.final:
                raise StoreLocked(f"a key rotation is under way (job {job.id}): `ctx status` "
                                  "shows its progress")
        unlocked(prepare_rotation)
        started = remote.rotate_key(wait=False)
        snap = follow(remote, started.job)
        if snap is None:
            return _still_running(remote, started.job, "key rotation")
        if snap.state == "failed" and snap.error is not None:
            raise snap.error.to_error()
        if snap.state != "done":
            raise StoreLocked(f"the key rotation was {snap.state}: the store keeps its key")
    finally:
        remote.close()
    seconds = round((snap.finished or 0.0) - (snap.started or 0.0), 3)
    return dataclasses.replace(started, seconds=seconds)


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MB"


def holder_hint(data_dir: str | None) -> str:
    """Who holds the store, for a ``store_locked`` error: the background engine's pid
    and `ctx stop`, or the pid of another process holding the lock file."""
    from ipc.remote import connect

    try:
        remote = connect(Path(data_dir) if data_dir else None)
    except Exception:  # noqa: BLE001 - a hint only
        remote = None
    if remote is not None:
        pid = remote.info["pid"]
        remote.close()
        return f"; the background engine (pid {pid}) has it open: {stop_command(data_dir)} stops it"
    holder = lock_pid(data_dir)
    if holder is not None:
        return f"; process {holder} holds it (another ctx command, or the app)"
    return ""


def lock_pid(data_dir: str | None) -> int | None:
    """The pid holding the data dir's lock file (Linux: /proc/locks), or None."""
    from engine import resolve_data_dir

    try:  # the lock file's name: engine.paths.lock_path
        inode = os.stat(resolve_data_dir(data_dir) / "engine.lock").st_ino
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split()
        if len(parts) > 5 and parts[1] == "FLOCK" and parts[5].split(":")[-1] == str(inode):
            try:
                return int(parts[4])
            except ValueError:
                return None
    return None


def stop_engine(data_dir: str | None, *, quiet: bool = False) -> int | None:
    """Ask the background engine of ``data_dir`` to stop and wait until it has; its pid,
    or None when none was running."""
    from ipc.connection import pid_alive
    from ipc.remote import connect

    remote = connect(Path(data_dir) if data_dir else None)
    if remote is None:
        return None
    pid = int(remote.info["pid"])
    try:
        remote.shutdown()
    finally:
        remote.close()
    if not quiet:
        print(f"ctx: stopping the background engine (pid {pid})...", file=sys.stderr)
    end = time.monotonic() + STOP_WAIT_S
    while pid_alive(pid):
        if time.monotonic() > end:
            raise StoreLocked(f"the background engine (pid {pid}) was asked to stop and "
                              f"is still running after {STOP_WAIT_S:.0f} s (finishing a "
                              f"job?); `kill {pid}` stops it at once")
        time.sleep(0.1)
    return pid


def cmd_stop(args: argparse.Namespace) -> int:
    pid = stop_engine(args.data_dir, quiet=True)
    if pid is None:
        from engine import resolve_data_dir

        print(f"no background engine runs for {resolve_data_dir(args.data_dir)}")
    else:
        print(f"stopped the background engine (pid {pid})")
    return 0


def with_store_closed(args: argparse.Namespace, fn: Callable[[], T]) -> T:
    """Run ``fn`` (which opens the store itself); when the background engine has the
    store open, stop it first if ``--stop`` was given or the user agrees on a terminal,
    then run ``fn`` again. Otherwise the error names the engine and `ctx stop`."""
    try:
        return fn()
    except StoreLocked as exc:
        from ipc.remote import connect

        remote = connect(Path(args.data_dir) if args.data_dir else None)
        if remote is None:
            raise
        pid = remote.info["pid"]
        remote.close()
        agreed = getattr(args, "stop", False) or _ask(
            f"the background engine (pid {pid}) has the store open; stop it and go on? "
            "[y/N] ")
        if not agreed:
            raise StoreLocked(f"{exc.message}: the background engine (pid {pid}) has it "
                              f"open; stop it with {stop_command(args.data_dir)} (or give "
                              "--stop), then run this again") from None
        stop_engine(args.data_dir)
        return fn()


def _ask(prompt: str) -> bool:
    if sys.stdin is None or not sys.stdin.isatty():
        return False
    sys.stderr.write(prompt)
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")
