"""PlaybookStore (seed 000 §2): one JSON file per dataset under a data directory, for local and batch use.

The HTTP agents are stateless (the playbook travels in the request); `/workflow/run`, the `/playbooks`
endpoints and the command line read and write playbooks here. Writes are atomic (temp file in the same
directory, fsync, rename, fsync of the directory), so a crash leaves the old playbook or the new one,
never half of one. A missing file is an empty playbook; a file that is not a valid playbook raises
`PlaybookCorrupt` naming the file and the problem. Dataset names are checked before they become paths,
so none can leave the directory.

Writers serialise on an exclusive `flock` of `.<dataset>.lock` beside the playbook, so two processes (two
service instances sharing PLAYBOOK_DATA_DIR, or the service and the command line) never interleave a
read-modify-write: `update` re-reads the stored playbook under the lock and lets the caller re-apply its
change to that fresh copy, so no concurrent writer's lesson is lost. Whatever is written, the id
high-water mark (`metadata.last_bullet_number`) never goes below the stored one, so an id is not issued
twice even when a caller writes a playbook that lost its metadata or its newest bullets. Waiting for the
lock never blocks the event loop (`update` polls it) and gives up at the request's deadline. `flock` is
local-filesystem locking: instances must share the directory through one kernel (a shared volume on one
host), not through NFS or an object-store mount.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import errno
import fcntl
import os
import random
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import msgspec
import structlog

from contracts.ace import MAX_BULLET_NUMBER, Playbook, PlaybookMetadata
from graphs.ace.playbook.ids import high_water, id_number

log = structlog.get_logger(__name__)

DATASET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
"""The contract's `DatasetName`: letters, digits, `_` and `-`; no dots, slashes or leading dash."""
MAX_FILE_BYTES = 256 * 1024 * 1024
LOCK_POLL_S = (0.002, 0.05)
"""First and longest pause between two tries of a held lock (doubling, with jitter)."""
LOCK_WAIT_UNBOUNDED_S = 60.0
"""How long `update` waits for the lock when the caller has no deadline."""
NEW_FILE_MODE = 0o666
"""A playbook and its lock file are created as any file is (`open`'s mode), less the process's umask."""
T = TypeVar("T")


class _IdOnly(msgspec.Struct):
    id: str


class _MarkOnly(msgspec.Struct):
    last_bullet_number: int = 0


class _Marks(msgspec.Struct):
    """Just what the high-water mark needs, read without building every bullet (nor the contract's bounds)."""

    metadata: _MarkOnly = msgspec.field(default_factory=_MarkOnly)
    bullets: list[_IdOnly] = msgspec.field(default_factory=list)


_decoder = msgspec.json.Decoder(Playbook)


class _MetadataOnly(msgspec.Struct):
    """The mark alone, for a file whose bullets cannot be read even as ids."""

    metadata: _MarkOnly = msgspec.field(default_factory=_MarkOnly)


_marks_decoder = msgspec.json.Decoder(_Marks)
_metadata_decoder = msgspec.json.Decoder(_MetadataOnly)
_UNREADABLE = (OSError, msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError)
"""What reading a stored file can raise when the file, not the caller, is at fault."""


class PlaybookStoreError(Exception):
    """A playbook could not be read or written."""


class PlaybookCorrupt(PlaybookStoreError):
    """The stored file exists but is not a valid playbook."""


class InvalidDatasetName(PlaybookStoreError, ValueError):
    """The dataset name could escape the data directory or is not a plain name."""


class PlaybookLockTimeout(TimeoutError):
    """Another writer held the dataset's lock until the deadline (a TimeoutError: the request's TIMEOUT)."""


_NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)
"""What a write refused for the directory's permissions or its file system says: the deployment's problem."""


def _write_problem(action: str, dataset: str, exc: OSError) -> PlaybookStoreError:
    """The one-line error for a failed lock or save; a directory this process may not write is named as such."""
    reason = exc.strerror or str(exc)
    if exc.errno in _NOT_WRITABLE:
        reason = f"the playbook directory is not writable by this process ({reason})"
    return PlaybookStoreError(f"could not {action} playbook {dataset!r}: {reason}")


class PlaybookStore:
    """Playbooks as `<data_dir>/<dataset>.json`, each written under its `.<dataset>.lock`."""

    def __init__(self, data_dir: str | Path) -> None:
        """Use `data_dir` (created on the first save)."""
        self.data_dir = Path(data_dir)

    def unwritable_reason(self) -> str | None:
        """Why a save would fail for want of permission (None: it may write), for a warning at start-up.

        Looked at once: the directory, or the nearest existing one it would be created in. Reading needs
        no write access, so this is a warning and not a refusal to start (a read-only root file system
        holds the default directory). Only permissions and a read-only mount are seen, not a full disk.
        """
        existing = next((d for d in (self.data_dir, *self.data_dir.resolve().parents) if d.is_dir()), None)
        if existing is None:
            return None
        if os.statvfs(existing).f_flag & os.ST_RDONLY:
            return f"{existing} is on a read-only file system"
        if not os.access(existing, os.W_OK | os.X_OK):
            return f"{existing} is not writable by this process (uid {os.geteuid()})"
        return None

    def path_for(self, dataset: str) -> Path:
        """The file of `dataset`.

        Raises:
            InvalidDatasetName: The name is not `[A-Za-z0-9][A-Za-z0-9_-]{0,63}`.
        """
        if not DATASET_NAME.fullmatch(dataset):
            raise InvalidDatasetName(f"invalid dataset name {dataset!r}: use letters, digits, '_' and '-'")
        return self.data_dir / f"{dataset}.json"

    def lock_path(self, dataset: str) -> Path:
        """The lock file writers of `dataset` hold (never removed: removing a lock file races its users)."""
        return self.path_for(dataset).with_name(f".{dataset}.lock")

    def exists(self, dataset: str) -> bool:
        """Whether `dataset` has a stored playbook (an empty one included)."""
        return self.path_for(dataset).is_file()

    def datasets(self) -> list[str]:
        """The names of the stored playbooks, sorted."""
        if not self.data_dir.is_dir():
            return []
        return sorted(p.stem for p in self.data_dir.glob("*.json") if DATASET_NAME.fullmatch(p.stem) and p.is_file())

    def load(self, dataset: str) -> Playbook:
        """The stored playbook of `dataset`, or an empty one when there is none.

        Raises:
            InvalidDatasetName: See `path_for`.
            PlaybookCorrupt: The file is unreadable, too large, not JSON, breaks the contract or repeats an id.
        """
        path = self.path_for(dataset)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return Playbook()
        if size > MAX_FILE_BYTES:
            raise self._corrupt(dataset, path, f"file is {size} bytes, over the {MAX_FILE_BYTES}-byte limit")
        try:
            playbook = _decoder.decode(path.read_bytes())
        except FileNotFoundError:
            return Playbook()  # removed between stat and read
        except _UNREADABLE as exc:
            raise self._corrupt(dataset, path, str(exc) or type(exc).__name__) from None
        duplicates = _duplicate_ids(playbook)
        if duplicates:
            raise self._corrupt(dataset, path, f"duplicate bullet ids {duplicates[:5]}")
        return playbook

    def load_replaceable(self, dataset: str) -> Playbook:
        """`load`, for a caller about to replace the whole playbook: a corrupt file is no obstacle.

        A corrupt file gives an empty playbook carrying what can still be read of its high-water mark
        (at most `MAX_BULLET_NUMBER`), so an import can repair it without ids being issued again.

        Raises:
            InvalidDatasetName: See `path_for`.
        """
        try:
            return self.load(dataset)
        except PlaybookCorrupt:
            log.warning("ace: replacing a corrupt stored playbook", dataset=dataset)
            return Playbook(metadata=PlaybookMetadata(last_bullet_number=_stored_mark(self.path_for(dataset))))

    def save(self, dataset: str, playbook: Playbook) -> Playbook:
        """Replace the stored playbook with `playbook` under the lock (waiting for it); return what was written.

        `updated_at` is set to now and the id high-water mark is kept at least at the stored one.

        Raises:
            InvalidDatasetName: See `path_for`.
            PlaybookStoreError: The playbook repeats an id, or the file could not be written.
        """
        _check_ids(dataset, playbook)
        with self._locked(dataset, blocking=True):
            return self._write(dataset, playbook, _stored_mark(self.path_for(dataset)))

    async def update(
        self,
        dataset: str,
        change: Callable[[Playbook], Awaitable[tuple[Playbook, T]]],
        *,
        deadline: float | None,
        replacing: bool = False,
    ) -> tuple[Playbook, T]:
        """Read-modify-write `dataset` under its lock: `change` gets the stored playbook as it is now.

        The lock is awaited without blocking the event loop; the file is read and written on a worker
        thread. Once the write has started it completes (and the lock is released only after it), even if
        the request is cancelled meanwhile, so a cancelled request never lets another writer interleave.

        Args:
            dataset: The stored playbook to change.
            change: Gets the fresh playbook; returns the playbook to write and anything for the caller.
            deadline: `time.monotonic()` by which the lock must be held and the change made; None waits
                up to LOCK_WAIT_UNBOUNDED_S.
            replacing: `change` replaces the whole playbook, so a corrupt file is read as `load_replaceable`
                reads it instead of raising `PlaybookCorrupt`.

        Returns:
            What was written, and what `change` returned with it.

        Raises:
            PlaybookLockTimeout: The lock or the change did not come before the deadline (nothing written).
            InvalidDatasetName, PlaybookCorrupt, PlaybookStoreError: As for `load` and `save`.
        """
        limit = deadline if deadline is not None else time.monotonic() + LOCK_WAIT_UNBOUNDED_S
        handle = await self._acquire(dataset, limit)
        try:
            fresh = await asyncio.to_thread(self.load_replaceable if replacing else self.load, dataset)
            playbook, extra = await change(fresh)
            if time.monotonic() >= limit:
                raise PlaybookLockTimeout(f"the deadline passed before playbook {dataset!r} could be saved")
            _check_ids(dataset, playbook)
            write = asyncio.ensure_future(asyncio.to_thread(self._write, dataset, playbook, high_water(fresh)))
            try:
                saved = await asyncio.shield(write)
            except asyncio.CancelledError:
                await asyncio.wait({write})  # keep the lock until the file is complete
                raise
        finally:
            _release(handle)
        return saved, extra

    @contextlib.contextmanager
    def _locked(self, dataset: str, *, blocking: bool) -> Iterator[int]:
        handle = self._open_lock(dataset)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
            yield handle
        finally:
            _release(handle)

    def _open_lock(self, dataset: str) -> int:
        path = self.lock_path(dataset)
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, NEW_FILE_MODE)  # the umask applies
        except OSError as exc:
            raise _write_problem("lock", dataset, exc) from None

    async def _acquire(self, dataset: str, limit: float) -> int:
        """The lock file's descriptor, holding its exclusive lock; polled so other coroutines keep running."""
        handle = self._open_lock(dataset)
        pause = LOCK_POLL_S[0]
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return handle
            except BlockingIOError:
                pass
            except BaseException:
                os.close(handle)
                raise
            left = limit - time.monotonic()
            if left <= 0:
                os.close(handle)
                log.warning("ace: playbook lock wait ran out", dataset=dataset)
                raise PlaybookLockTimeout(f"playbook {dataset!r} stayed locked by another writer until the deadline")
            try:
                await asyncio.sleep(min(left, pause * random.uniform(0.5, 1.5)))  # noqa: S311 - jitter, not crypto
            except BaseException:
                os.close(handle)
                raise
            pause = min(pause * 2, LOCK_POLL_S[1])

    def _write(self, dataset: str, playbook: Playbook, stored_mark: int) -> Playbook:
        """Write atomically (the lock is held); `updated_at` now, the high-water mark never below `stored_mark`."""
        path = self.path_for(dataset)
        metadata = msgspec.structs.replace(
            playbook.metadata,
            updated_at=datetime.datetime.now(datetime.UTC),
            last_bullet_number=max(high_water(playbook), stored_mark),
        )
        saved = msgspec.structs.replace(playbook, metadata=metadata)
        data = msgspec.json.format(msgspec.json.encode(saved), indent=2) + b"\n"
        try:
            _atomic_write(path, data)
        except OSError as exc:
            raise _write_problem("save", dataset, exc) from None
        log.info("ace: playbook saved", dataset=dataset, bullets=len(saved.bullets))
        return saved

    def _corrupt(self, dataset: str, path: Path, reason: str) -> PlaybookCorrupt:
        log.error("ace: stored playbook is corrupt", dataset=dataset, file=path.name, reason=reason)
        return PlaybookCorrupt(f"stored playbook {dataset!r} ({path.name}) is corrupt: {reason}")


def _release(handle: int) -> None:
    """Unlock and close (closing alone would release the lock too; unlocking first says what is meant)."""
    try:
        fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        os.close(handle)


def _check_ids(dataset: str, playbook: Playbook) -> None:
    duplicates = _duplicate_ids(playbook)
    if duplicates:
        raise PlaybookStoreError(f"refusing to save playbook {dataset!r}: duplicate bullet ids {duplicates[:5]}")


def _stored_mark(path: Path) -> int:
    """The high-water mark of the file at `path`, at most `MAX_BULLET_NUMBER` (0 when missing or unreadable).

    The contract's bounds are not applied on reading, so a file that is corrupt only because its mark went
    past the maximum still keeps every id it issued from being issued again once it is replaced. Read in
    two tries: the metadata's mark and every bullet's id number; failing that, the metadata's mark alone.
    """
    try:
        data = path.read_bytes()
    except OSError:
        return 0
    try:
        marks = _marks_decoder.decode(data)
        mark = max(
            [marks.metadata.last_bullet_number, *(n for b in marks.bullets if (n := id_number(b.id)) is not None)]
        )
    except _UNREADABLE:
        try:
            mark = _metadata_decoder.decode(data).metadata.last_bullet_number
        except _UNREADABLE:
            return 0
    return min(max(mark, 0), MAX_BULLET_NUMBER)


def _duplicate_ids(playbook: Playbook) -> list[str]:
    seen: set[str] = set()
    duplicates: list[str] = []
    for bullet in playbook.bullets:
        if bullet.id in seen:
            duplicates.append(bullet.id)
        seen.add(bullet.id)
    return duplicates


TEMP_NAME_TRIES = 100
"""How many fresh temporary names a save tries before giving up (each is 64 random bits: one try in practice)."""


def _create_temporary(path: Path) -> tuple[int, Path]:
    """A new, empty file beside `path`, open for writing, under a name no other writer has.

    Created with `NEW_FILE_MODE` and `O_EXCL`, as `open` creates any file: the kernel applies the umask (or the
    directory's default ACL), as it does for the lock file, so nothing here reads or computes a umask. (`mkstemp`
    made it 0600 whatever the umask; a later `fchmod` to 0666 less a umask read from /proc gave 0666 when that
    read failed.) So the service and the command line, run as two users of one group (README allows it), can
    each read what the other saved.

    Raises:
        OSError: The file cannot be created (`FileExistsError` only after `TEMP_NAME_TRIES` taken names).
    """
    for _ in range(TEMP_NAME_TRIES):
        temp = path.with_name(f".{path.stem}.{secrets.token_hex(8)}.tmp")
        try:
            return os.open(temp, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, NEW_FILE_MODE), temp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, f"no free temporary name after {TEMP_NAME_TRIES} tries", str(path.parent))


def _atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so readers see the old file or the new one, even across a crash."""
    fd, temp_name = _create_temporary(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # make the rename itself durable
    finally:
        os.close(directory)
