"""The root's write lock: ``flock`` on ``.fsmem/lock``, fair, bounded by real holds, and signed.

Waiting is fair: a waiter first takes a second lock, the queue (``.fsmem/lock.queue``), and holds it
while it waits for the lock itself, so when the holder lets go there is exactly one contender — the
one next in line — and a process that releases and asks again at once queues behind it instead of
winning the race a poller would lose. Everyone else waits in the kernel on the queue (``flock``
blocking on a helper thread, so a timeout can give up on them), never by polling. A lock with nobody
in line costs two non-blocking ``flock`` calls.

While held, the lock file says who holds it (``pid host command since``); the holder empties it on
release. So a waiter that gives up can say who held it and for how long, and a lock taken over a
non-empty file tells that the last holder died holding it: ``crashed`` is left beside it, and the
temp files and half-done changes it left are repaired on the next open (``Memory``).

Re-entrant per thread; each thread has its own descriptors, so threads exclude each other like
processes (``flock`` locks belong to open file descriptions, not processes).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from fsmem._errors import Busy, Storage
from fsmem._store.atomic import make_dirs
from fsmem._store.disk_faults import storage_error

QUEUE_SUFFIX = ".queue"  # ".fsmem/lock.queue": whoever holds it is next in line
CRASH_MARK = "crashed"  # beside the lock: the last holder died holding it (repair on the next open)
# A wait that timed out leaves its helper thread in line until the holder lets go (a blocked flock
# cannot be called off). A long-lived process retrying against one long hold would pile them up, so
# past this many still in line a call is refused at once.
MAX_STRANDED = 8

_stranded = 0  # helper threads of this process that gave up and are still in line
_stranded_mutex = threading.Lock()


def _count_stranded(change: int) -> int:
    global _stranded
    with _stranded_mutex:
        _stranded += change
        return _stranded


class RootLock:
    def __init__(self, file: Path, timeout: float) -> None:
        self.file = file
        self.timeout = timeout
        self._local = threading.local()
        try:  # the root as opened: one deleted, or replaced by another folder, is refused
            found = os.stat(file.parent.parent)
            self._root_id: tuple[int, int] | None = (found.st_dev, found.st_ino)
        except OSError:
            self._root_id = None

    def _depth(self) -> int:
        return getattr(self._local, "depth", 0)

    @contextlib.contextmanager
    def held(self, command: str = "change") -> Iterator[None]:
        if self._depth():
            self._local.depth += 1
            try:
                yield
            finally:
                self._local.depth -= 1
            return
        fd = self._acquire(command)
        assert fd is not None
        self._local.depth = 1
        try:
            yield
        finally:
            self._local.depth = 0
            self._release(fd)

    @contextlib.contextmanager
    def held_if_free(self, command: str) -> Iterator[bool]:
        """The lock if nobody holds it or waits for it, else nothing (never waits): yields whether held."""
        if self._depth():
            with self.held(command):
                yield True
            return
        fd = self._acquire(command, wait=False)
        if fd is None:
            yield False
            return
        self._local.depth = 1
        try:
            yield True
        finally:
            self._local.depth = 0
            self._release(fd)

    def signed(self) -> bool:
        """Whether the lock file names a holder: one holds it now, or one died holding it."""
        try:
            return os.stat(self.file).st_size > 0
        except OSError:
            return False

    # ---- acquiring --------------------------------------------------------------------------

    def _open(self, file: Path | None = None) -> int:
        root = self.file.parent.parent
        try:
            found = os.stat(root)
        except OSError:
            found = None
        if found is None or (self._root_id is not None and (found.st_dev, found.st_ino) != self._root_id):
            # never made again here: a new empty folder would silently stand in for the memory
            raise Storage(
                f"the memory folder {root} is gone (deleted or moved while it was open); nothing "
                "was changed. Open it again where it is now, or make a new one with `fsmem init`"
            )
        if not self.file.parent.is_dir():  # only fsmem's state was removed: the memory is still there
            make_dirs(self.file.parent)
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(file or self.file, flags, 0o600)
        except OSError as error:
            if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise read_only(self.file.parent.parent, error) from error
            raise storage_error("opening the root's lock", error, changed=False) from error
        try:
            if os.fstat(fd).st_mode & 0o077:
                os.fchmod(fd, 0o600)  # the lock says who works here: the owner's alone
        except OSError:
            pass
        return fd

    def _acquire(self, command: str, wait: bool = True) -> int | None:
        fd = self._open()
        try:
            queue = self._open(self.file.with_name(self.file.name + QUEUE_SUFFIX))
        except BaseException:
            os.close(fd)
            raise
        started = time.monotonic()
        try:
            first = _try(queue)
            got = first and _try(fd)
            if got:
                fcntl.flock(queue, fcntl.LOCK_UN)
            elif not wait:
                if first:
                    fcntl.flock(queue, fcntl.LOCK_UN)
                os.close(fd)
                return None
            elif (stranded := _count_stranded(0)) >= MAX_STRANDED:
                raise Busy(
                    f"the memory is busy: {stranded} earlier calls of this process are still in line for "
                    f"the root's lock{', held by ' + h if (h := _holder(self.file)) else ''}; nothing was "
                    "changed, try again once it is let go"
                ) from None
            elif not _wait(fd, queue, first, self.timeout):  # someone is in line, or it is held: wait in line
                waited = time.monotonic() - started
                holder = _holder(self.file)
                raise Busy(
                    f"the memory is busy: this call waited {waited:.1f}s for the root's lock"
                    f"{', held by ' + holder if holder else ''}; nothing was changed, try again in a "
                    "moment"
                ) from None
        except BaseException:
            os.close(fd)
            raise
        finally:
            os.close(queue)  # a helper that gave up holds its own duplicate until it lets go
        try:
            previous = os.pread(fd, 256, 0)
            if previous.strip():  # a holder that released would have emptied it: it died holding the lock
                _mark_crash(self.file.parent)
            stamp = f"{os.getpid()} {os.uname().nodename} {command} {time.time():.3f}\n".encode()
            os.ftruncate(fd, 0)
            os.pwrite(fd, stamp, 0)
        except OSError:
            pass  # a lock that cannot be signed still locks (a read-only file system never gets here)
        return fd

    def _release(self, fd: int) -> None:
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _try(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _wait(fd: int, queue: int, in_line: bool, timeout: float) -> bool:
    """Take the queue (unless ``in_line``), then the lock, then let the queue go; at most ``timeout``
    seconds, blocking in the kernel. True when the lock on ``fd`` is held.

    The blocking calls run on a helper thread with duplicate descriptors (the locks belong to the
    shared open file descriptions); one that outlives the timeout lets go of whatever it got.
    """
    own, own_queue = os.dup(fd), os.dup(queue)
    got = threading.Event()
    gate = threading.Lock()
    abandoned = done = False

    def block() -> None:
        nonlocal done
        try:
            if not in_line:
                fcntl.flock(own_queue, fcntl.LOCK_EX)
            fcntl.flock(own, fcntl.LOCK_EX)
        except OSError:
            pass
        else:
            with gate:
                if not abandoned:
                    got.set()
        finally:
            if not got.is_set():
                with contextlib.suppress(OSError):
                    fcntl.flock(own, fcntl.LOCK_UN)
            with contextlib.suppress(OSError):
                fcntl.flock(own_queue, fcntl.LOCK_UN)
            os.close(own_queue)
            os.close(own)
            with gate:
                done = True
                stranded = abandoned
            if stranded:
                _count_stranded(-1)

    threading.Thread(target=block, name="fsmem-lock-wait", daemon=True).start()
    got.wait(timeout)
    with gate:
        if got.is_set():
            return True
        abandoned = True
        if not done:
            _count_stranded(+1)
        return False


def _holder(file: Path) -> str:
    """Who the lock file says holds the lock, in words; "" when it does not say."""
    try:
        with open(file, "rb") as handle:
            words = handle.read(256).decode("utf-8", "replace").split()
    except OSError:
        return ""
    if len(words) < 4:
        return ""
    pid, host, command, since = words[:4]
    try:
        held_for = f" for {max(0.0, time.time() - float(since)):.1f}s"
    except ValueError:
        held_for = ""
    return f"process {pid} on {host} ({command}){held_for}"


def _mark_crash(state: Path) -> None:
    try:
        fd = os.open(state / CRASH_MARK, os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        os.close(fd)
    except OSError:
        pass


def read_only(root: Path, error: OSError) -> Storage:
    problem = Storage(
        f"the memory folder {root} cannot be changed ({error.strerror}: it is read-only "
        "here); it can still be read and searched. Nothing was changed"
    )
    problem.read_only = True
    return problem
