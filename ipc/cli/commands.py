"""The body of each `ctx` subcommand. Each returns an exit code."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from engine import EngineAPI, InvalidInput, JobSnapshot, KeyUnavailable, NotUtf8
from ipc.cli.backend import open_backend, served
from ipc.cli.output import emit_json, fmt_time, parse_when, table
from ipc.cli.progress import JobProgress, job_or_none, summary
from ipc.cli.targets import path_prefix
from ipc.errors import ServerUnavailable
from ipc.places import place
from ipc.status_text import adapt_line, histogram_line, memory_line, progress_text, waiting_line


def no_way_to_unlock() -> str:
    """What to do when no keychain, no terminal and no headless passphrase is here."""
    from engine import default_key_file

    return ("no keychain here and no terminal to ask for a passphrase. Give one in any of "
            "these ways: `ctx init --passphrase-stdin` (the passphrase on standard input, "
            "e.g. from a secret manager), CTX_PASSPHRASE=<passphrase>, CTX_KEY_FILE=<a file "
            f"readable by you alone that holds it>, or put it in {default_key_file()} (readable "
            "by you alone), where ctx looks by itself. Later commands unlock the store the "
            "same way: the key file, CTX_PASSPHRASE or CTX_KEY_FILE where they run, or the "
            "passphrase typed on a terminal")


def _init_passphrase(args: argparse.Namespace) -> str | None:
    """The passphrase that wraps the new store's key; None: the keychain keeps the key."""
    from engine import headless_passphrase, keychain_available

    if args.passphrase_stdin:
        return sys.stdin.readline().rstrip("\n")
    if not args.no_keychain and keychain_available():
        return None
    passphrase = headless_passphrase()
    if passphrase is not None:
        return passphrase
    if sys.stdin is None or not sys.stdin.isatty():
        raise KeyUnavailable(no_way_to_unlock())
    passphrase = getpass.getpass("new passphrase: ")
    if passphrase != getpass.getpass("again: "):
        raise InvalidInput("the passphrases differ", field="passphrase")
    return passphrase


def cmd_init(args: argparse.Namespace) -> int:
    from engine import headless_key_file, init_store

    passphrase = _init_passphrase(args)
    if passphrase is not None and not passphrase:
        raise InvalidInput("the passphrase is empty", field="passphrase")
    from engine import generate_recovery_key
    from ipc.cli.key_cmd import print_recovery_key

    recovery = generate_recovery_key()
    root = init_store(args.data_dir, passphrase=passphrase,
                      use_keychain=False if passphrase is not None else None,
                      recovery_key=recovery)
    print(f"created store in {root}")
    if passphrase is None:
        print("its key is in this system's keychain: ctx commands unlock it by themselves")
    elif not args.passphrase_stdin and (key_file := headless_key_file()):
        print(f"its key is wrapped with the passphrase in {key_file}: later commands find "
              "it there by themselves; keep that file (and the recovery key below) safe")
    else:
        print("its key is wrapped with your passphrase: later commands ask for it on a "
              "terminal; where none is (services, agents, scripts) set CTX_PASSPHRASE or "
              "CTX_KEY_FILE (a file readable by you alone) to it")
    print_recovery_key(recovery)
    return 0


def _wait_job(backend: EngineAPI, job_id: str) -> JobSnapshot:
    bar = JobProgress(describe=lambda jid: job_or_none(backend, jid))
    seen: JobSnapshot | None = None
    try:
        while True:
            try:
                snap = backend.job(job_id)
            except ServerUnavailable as exc:  # the engine died under the job: say so now
                if seen is not None:
                    exc.message += (f"; when last seen, job {job_id} had stored "
                                    f"{seen.files_done} of {seen.files_total} files "
                                    "(what it had not made ready is rolled back at the "
                                    "next start)")
                raise
            seen = snap
            bar.update(snap)
            if snap.final:
                bar.update(snap, force=True)
                return snap
            time.sleep(0.1)
    finally:
        bar.close()


def _engine_stopped(info: Any, exc: Exception) -> bool:
    """Whether the engine of ``info`` has stopped (waiting up to ``STOPPING_WAIT_S`` for
    it to end once it is stopping: it said so in its refusal ``exc``, or its connection
    file is gone or another engine's)."""
    from ipc.connection import pid_alive
    from ipc.discovery import find_live

    said = isinstance(exc, ServerUnavailable) and \
        exc.details.get("reason") in ("stopping", "stopped")
    live = None if said else find_live(info["data_dir"])
    if live is not None and live["pid"] == info["pid"] and pid_alive(info["pid"]):
        return False  # still serving: it did not answer
    deadline = time.monotonic() + STOPPING_WAIT_S
    while pid_alive(info["pid"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not pid_alive(info["pid"])


def _read_stdin() -> str:
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise NotUtf8("standard input is not valid UTF-8") from None


# A Ctrl-C that reaches the background engine too (a terminal's process group, as
# `make run` starts them) stops it at the same time: the cancel asked of it is not
# answered, and this much is waited before looking whether it is stopping (it cancels
# its jobs itself then: ipc/serve.py). Hand-set: a cancel is answered in milliseconds.
INTERRUPT_CALL_S = 3.0
STOPPING_WAIT_S = 60.0  # how long a stopping engine is waited for (its stop: ~1 s)


def _interrupted(backend: Any, job_ids: list[str], as_json: bool) -> int:
    """Ctrl-C: stop the jobs at their next safe point, say what was kept, exit 130."""
    targets = list(job_ids)
    try:
        if served(backend):
            from ipc.remote import RemoteEngine

            backend = RemoteEngine(backend.info, timeout=INTERRUPT_CALL_S, retries=0)
            for jid in targets:
                backend.cancel_job(jid)
        else:  # this process owns the engine: nothing it queued may run on at close
            targets = [s.id for s in backend.cancel_all()] or targets
        snaps = [backend.wait(jid, 30.0) for jid in targets]
    except Exception as exc:  # noqa: BLE001 - an old server without cancel_job
        if served(backend) and _engine_stopped(backend.info, exc):
            print("ctx: interrupted; the background engine stopped too, and its jobs with "
                  "it at their next safe point (`ctx status` lists them at its next start)",
                  file=sys.stderr)
        else:
            print(f"ctx: interrupted; the jobs could not be cancelled ({type(exc).__name__})",
                  file=sys.stderr)
        return 130
    kept = sum(len(s.sources) for s in snaps)
    chunks = sum(s.chunks for s in snaps)
    waiting = sum(max(0, s.to_embed - s.embedded) for s in snaps)
    if as_json:
        emit_json({"interrupted": True, "jobs": [s.to_dict() for s in snaps]})
    print(f"interrupted: kept {kept} sources ({chunks} chunks) stored before the stop; "
          "files not finished were not stored", file=sys.stderr)
    if waiting:
        print(f"  they are searchable by keyword; {waiting} chunks wait for their vectors, "
              "made by the next ingest or engine start", file=sys.stderr)
    return 130


def cmd_ingest(args: argparse.Namespace) -> int:
    try:
        backend = open_backend(args.data_dir, local_only=args.local, need_model=True)
    except KeyboardInterrupt:
        print("interrupted: nothing was stored", file=sys.stderr)
        return 130
    job_ids: list[str] = []
    try:
        return _ingest(backend, args, job_ids)
    except KeyboardInterrupt:
        code = _interrupted(backend, job_ids, args.json)
        backend.close()  # the store is closed: everything kept is on disk
        sys.stdout.flush()
        sys.stderr.flush()
        # Exit now: a model still loading in a helper thread would hold up (or, in
        # torch's C++ threads, abort) the interpreter's shutdown for many seconds.
        os._exit(code)
    finally:
        backend.close()


def _ingest(backend: EngineAPI, args: argparse.Namespace, job_ids: list[str]) -> int:
    paths = [p for p in args.paths if p != "-"]
    missing = [p for p in paths if not Path(p).exists()]
    for p in missing:
        print(f"ctx: not found: {p}", file=sys.stderr)
    paths = [p for p in paths if p not in missing]
    if "-" in args.paths:
        job_ids.append(backend.ingest(text=_read_stdin(), title=args.title or "stdin",
                                      kind="text"))
    if paths:
        from engine import shown_path  # a name that is not UTF-8 travels as it is shown

        job_ids.append(backend.ingest(paths=[shown_path(Path(p).resolve()) for p in paths]))
    if args.no_wait:
        emit_json({"jobs": job_ids}) if args.json else print("\n".join(job_ids))
        return 3 if missing else 0
    snaps = [_wait_job(backend, j) for j in job_ids]
    if args.json:
        emit_json({"jobs": [s.to_dict() for s in snaps]})
    else:
        for s in snaps:
            first, *rest = summary(s)
            print(first)
            for line in rest:
                print(line, file=sys.stderr)
            for err in s.errors:
                print(f"  failed {err.path}: {err.reason}", file=sys.stderr)
            if s.state == "failed" and s.error is not None:
                print(f"  job failed [{s.error.name}]: {s.error.message}", file=sys.stderr)
    if any(s.state == "failed" for s in snaps):
        return 1
    return 3 if missing else 0


def cmd_search(args: argparse.Namespace) -> int:
    backend = open_backend(args.data_dir, local_only=args.local, need_model=True)
    try:
        hits = backend.search(args.query, args.k, kinds=args.kind,
                              path_prefix=path_prefix(args.path),
                              since=parse_when(args.since), until=parse_when(args.until))
    finally:
        backend.close()
    if args.json:
        emit_json({"hits": [h.to_dict() for h in hits]})
        return 0
    if not hits:
        print("no results")
    for i, h in enumerate(hits, 1):
        lanes = ",".join(sorted(h.lanes))
        what = f"{h.kind} {h.heading}" if h.heading and h.path else h.kind
        print(f"{i:>2}. {h.score:.4f} [{lanes}] {place(h)} ({what}, chunk {h.chunk_id})")
        snippet = " ".join(h.text.split())[:160]
        print(f"    {snippet}")
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    live = None
    if args.live:
        try:
            live = json.loads(Path(args.live).read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            raise InvalidInput("--live must name a readable JSON file") from None
        if isinstance(live, dict) and "items" in live:  # {"items": [...]}, as a gatherer writes
            live = live["items"]  # anything else goes as it is: the engine says what is wrong
    backend = open_backend(args.data_dir, local_only=args.local, need_model=True)
    try:
        payload = backend.build_context(args.query, live=live, budget=args.budget,
                                        fmt=args.format, mode=args.mode, now=parse_when(args.now))
    finally:
        backend.close()
    if args.format == "json":
        emit_json(payload.to_dict())
    else:
        sys.stdout.write(payload.context)
        if payload.context and not payload.context.endswith("\n"):
            sys.stdout.write("\n")
    if not payload.items:  # never an empty answer without a word
        print(f"ctx: the context is empty: nothing stored matched the query, or nothing that "
              f"matched fits in {payload.budget} tokens", file=sys.stderr)
    return 0


def cmd_sources(args: argparse.Namespace) -> int:
    backend = open_backend(args.data_dir, local_only=args.local)
    try:
        rows = backend.sources()
    finally:
        backend.close()
    if args.json:
        emit_json({"sources": [s.to_dict() for s in rows]})
    else:
        table([[str(s.id), s.kind, str(s.n_chunks), fmt_time(s.ingested_at), s.uri]
               for s in rows], ["id", "kind", "chunks", "ingested", "source"])
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    backend = open_backend(args.data_dir, local_only=args.local)
    try:
        status = backend.status()
        metrics = backend.metrics()
        jobs = [j for j in backend.jobs() if not j.final] if status.jobs_active else []
    finally:
        backend.close()
    shown = {**status.to_dict(), "served": served(backend)}
    if args.json:
        emit_json({"status": shown, "metrics": metrics.to_dict(),
                   "jobs": [j.to_dict() for j in jobs]})
        return 0
    for key in ("data_dir", "sources", "chunks", "tokens", "vectors", "vector_backend", "model",
                "store_bytes", "served"):
        print(f"{key:>15}: {shown[key]}")
        if key == "vector_backend":
            print(f"{'in memory':>15}: {memory_line(status.vectors_in_memory)}")
        if key == "vectors" and status.sources_waiting:
            print(f"{'waiting':>15}: {waiting_line(status)}")
        if key == "model" and status.model_backend_reason:
            print(f"{'model backend':>15}: {status.model_backend_reason}")
    print(f"{'last backup':>15}: "
          f"{fmt_time(status.last_backup) + ' UTC' if status.last_backup else 'never'}")
    if status.key_method:
        print(f"{'key':>15}: {status.key_method}, "
              f"{'with' if status.recovery_key else 'NO'} recovery key")
    if status.adapt is not None:
        print(f"{'recall adapt':>15}: {adapt_line(status)}")
    for name, h in sorted(metrics.histograms.items()):
        print(histogram_line(name, h))
    for job in sorted(jobs, key=lambda j: j.created):  # as the app's tray and card say it
        print(f"{'job':>15}: {job.kind} {job.id}: {progress_text(job)}")
    for name in sorted(status.alerts):
        print(f"ALERT {name}")
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    backend = open_backend(args.data_dir, local_only=args.local)
    try:
        rows = backend.audit(since=parse_when(args.since), limit=args.limit)
    finally:
        backend.close()
    if args.json:
        emit_json({"audit": [r.to_dict() for r in rows]})
    else:
        table([[fmt_time(r.time), r.method, str(r.caller_pid or "-"),
                json.dumps(r.counts, sort_keys=True)] for r in rows],
              ["time", "method", "pid", "counts"])
    return 0


def cmd_repair(args: argparse.Namespace) -> int:
    from engine import repair_store
    from ipc.cli.long_cmd import with_store_closed

    result = with_store_closed(args, lambda: repair_store(args.data_dir))
    if args.json:
        emit_json(result.to_dict())
    else:
        for part, where in sorted((result.set_aside or {}).items()):
            print(f"damaged {part}/ set aside as {where}")
        print(f"rebuilt {result.vectors} vectors ({result.embedded} embedded again) in "
              f"{result.seconds:.1f} s; {result.cache_rows_dropped or 0} unused "
              "embedding-cache rows dropped")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """The headless engine (``ipc.serve.serve``: idle stop and sync on start live there)."""
    from ipc.cli.backend import open_engine, stop_command
    from ipc.serve import serve

    def ready(info: Any) -> None:
        stop = "Ctrl-C" if os.name == "nt" else f"Ctrl-C or `kill {os.getpid()}`"
        print(f"ctx: serving {info['data_dir']} at {info['endpoint']} (pid {os.getpid()}); "
              f"stop it with {stop}, or {stop_command(args.data_dir)} from another terminal",
              flush=True)

    return serve(Path(args.data_dir) if args.data_dir else None, endpoint=args.endpoint,
                 workers=args.workers, engine_factory=open_engine, ready=ready,
                 idle_timeout=float(args.idle_timeout) if args.idle_timeout else None,
                 sync_on_start=args.sync_on_start)


def cmd_app(args: argparse.Namespace) -> int:
    """The desktop app (the ``desktop`` extra), started as its own program: the
    ``ctx-desktop`` entry point. It shares this data dir flag; its output is passed on."""
    from ipc.cli.launch import desktop_command

    argv = ["--data-dir", args.data_dir] if args.data_dir else []
    for path in args.ingest:
        argv += ["--ingest", path]
    argv += [f"--{flag}" for flag in ("status", "quit", "pause", "resume")
             if getattr(args, flag, False)]
    if args.no_tray:
        argv.append("--no-tray")
    with subprocess.Popen([*desktop_command(), *argv], stdout=subprocess.PIPE, text=True,
                          encoding="utf-8", errors="replace") as app:
        assert app.stdout is not None
        for line in app.stdout:  # line by line: `ctx app --status` reads like the app's own
            sys.stdout.write(line)
            sys.stdout.flush()
        return app.wait()


def cmd_recall(args: argparse.Namespace) -> int:
    from ipc.cli.recall_cmd import run_recall

    return run_recall(args)


def cmd_mcp(args: argparse.Namespace) -> int:
    from ipc.mcp.server import run_mcp

    return run_mcp(args)


def cmd_hook(args: argparse.Namespace) -> int:
    from ipc.cli.hook_cmd import run_hook

    return run_hook(args)
