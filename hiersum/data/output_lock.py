"""One writer per output: every command that writes an output holds an OS lock on it for as long as it writes
(:func:`output_lock`), so a second process on the same output is refused at once, in one line naming the
process that holds it, before it touches anything.

The lock is ``flock`` on a lock file beside the output, ``.<name>.lock``, through filelock's ``UnixFileLock``
(without its fallback to a soft lock, which the kernel would not release); an output file is replaced by a rename
when it starts afresh or is merged, and a model directory as a whole, so the lock cannot be on the output
itself. The kernel releases a ``flock`` when its process ends however it ends: a holder killed by
SIGKILL leaves at most a stale lock file, which the next run locks as if it were new. The file holds one line
saying who holds it (process id, host, command, start time), read by the process refused; it is deleted when
the holder releases it. A process that locks a lock file deleted under it (by the holder releasing it between
the open and the lock) does not hold it (filelock checks), and starts again.

``flock`` locks are local to a machine on most network file systems (NFS: ``fcntl`` byte-range locks are
forwarded, ``flock`` since Linux 2.6.12 is emulated with them): outputs written by jobs of several machines are
shards, one output each (:mod:`hiersum.commands.shards`).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from hiersum.errors import UsageError

STDOUT = "-"


def lock_path(output: str | os.PathLike[str]) -> Path:
    """``dir/out.jsonl`` -> ``dir/.out.jsonl.lock`` (the lock file of an output file or directory)."""
    output = Path(os.path.abspath(output))
    return output.with_name(f".{output.name}.lock")


class OutputLocked(UsageError):
    """Another process holds the lock of the output (its holder line in the message)."""


@contextlib.contextmanager
def output_lock(output: str | os.PathLike[str], *, what: str = "output") -> Iterator[None]:
    """Hold the lock of ``output`` (a file or a directory, existing or not; ``-``: standard output, no lock)
    for the block; :class:`OutputLocked` (a usage error: exit status 2) at once when another process holds it,
    a :class:`UsageError` when the lock file cannot be made (a folder that cannot be written). The folder of the
    output is created when missing (the lock file needs it)."""
    if str(output) == STDOUT:
        yield
        return
    path = lock_path(output)
    place = next(folder for folder in [path.parent, *path.parent.parents] if folder.exists())
    if not (place.is_dir() and os.access(place, os.W_OK | os.X_OK)):
        raise UsageError(f"cannot write {what} {output}: {place} is not a writable folder; choose another output "
                         "(nothing was written)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = _acquire(path, output, what)
    except OSError as error:
        raise UsageError(f"cannot write {what} {output}: its lock file {path} cannot be made "
                         f"({error.strerror or error}); choose another output (nothing was written)") from None
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()  # while still held: whoever opened it before now finds it deleted and starts again
        lock.release()


def _acquire(path: Path, output: str | os.PathLike[str], what: str) -> FileLock:
    """The lock of ``path``, held by this process (:func:`output_lock`); :class:`OutputLocked` naming its holder
    when another process holds it. filelock does not hold a file deleted under it after its open (by the holder
    releasing it): this process then tries again, on the file now at that path."""
    while True:
        lock = FileLock(path, mode=0o644, blocking=False, fallback_to_soft=False, on_acquired=_write_holder_line)
        try:
            lock.acquire()
            return lock
        except Timeout:
            holder = _holder(path)
        if holder is not None:
            raise OutputLocked(f"{what} {output} is being written by another process ({holder}); wait for it to "
                               "end or stop it, or choose another output (nothing was written)") from None


def _write_holder_line(fd: int) -> None:
    """Write :func:`_holder_line` into the lock file just locked (open as ``fd``)."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, _holder_line().encode("utf-8"), 0)


def _holder_line() -> str:
    """Who holds the lock: ``pid 123 on HOST since 2026-11-25 20:30:01 UTC: hiersum summarize ...``."""
    since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    command = shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv and sys.argv[0] else "python"
    return f"pid {os.getpid()} on {socket.gethostname()} since {since}: {command}"


def _holder(path: Path, *, attempts: int = 20) -> str | None:
    """The holder line of the lock file at ``path``; None when there is none any more (its holder released it).
    The holder writes its line just after locking, so an empty file is read again a few times (20 ms apart)
    before it is reported as unknown."""
    for _ in range(attempts):
        try:
            text = path.read_bytes()[:4096].decode("utf-8", errors="replace").strip()
        except FileNotFoundError:
            return None
        if text:
            return " ".join(text.split())
        time.sleep(0.02)
    return "a process that has not yet said which"
