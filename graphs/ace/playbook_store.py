"""PlaybookStore (seed 000 §2): one JSON file per dataset under a data directory, for local and batch use.

The HTTP agents are stateless (the playbook travels in the request); `/workflow/run` and the command
line read and write playbooks here. Writes are atomic (temp file in the same directory, fsync, rename,
fsync of the directory), so a crash leaves the old playbook or the new one, never half of one. A missing
file is an empty playbook; a file that is not a valid playbook raises `PlaybookCorrupt` naming the file
and the problem. Dataset names are checked before they become paths, so none can leave the directory.
"""

from __future__ import annotations

import datetime
import os
import re
import tempfile
import threading
from pathlib import Path

import msgspec
import structlog

from contracts.ace import Playbook

log = structlog.get_logger(__name__)

DATASET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
"""The contract's `DatasetName`: letters, digits, `_` and `-`; no dots, slashes or leading dash."""
MAX_FILE_BYTES = 256 * 1024 * 1024
_decoder = msgspec.json.Decoder(Playbook)


class PlaybookStoreError(Exception):
    """A playbook could not be read or written."""


class PlaybookCorrupt(PlaybookStoreError):
    """The stored file exists but is not a valid playbook."""


class InvalidDatasetName(PlaybookStoreError, ValueError):
    """The dataset name could escape the data directory or is not a plain name."""


class PlaybookStore:
    """Playbooks as `<data_dir>/<dataset>.json`."""

    def __init__(self, data_dir: str | Path) -> None:
        """Use `data_dir` (created on the first save)."""
        self.data_dir = Path(data_dir)
        self._lock = threading.Lock()

    def path_for(self, dataset: str) -> Path:
        """The file of `dataset`.

        Raises:
            InvalidDatasetName: The name is not `[A-Za-z0-9][A-Za-z0-9_-]{0,63}`.
        """
        if not DATASET_NAME.fullmatch(dataset):
            raise InvalidDatasetName(f"invalid dataset name {dataset!r}: use letters, digits, '_' and '-'")
        return self.data_dir / f"{dataset}.json"

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
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, OSError) as exc:
            raise self._corrupt(dataset, path, str(exc)) from None
        duplicates = _duplicate_ids(playbook)
        if duplicates:
            raise self._corrupt(dataset, path, f"duplicate bullet ids {duplicates[:5]}")
        return playbook

    def save(self, dataset: str, playbook: Playbook) -> Playbook:
        """Write `playbook` atomically with `updated_at` set to now; return what was written.

        Raises:
            InvalidDatasetName: See `path_for`.
            PlaybookStoreError: The playbook repeats an id, or the file could not be written.
        """
        path = self.path_for(dataset)
        duplicates = _duplicate_ids(playbook)
        if duplicates:
            raise PlaybookStoreError(f"refusing to save playbook {dataset!r}: duplicate bullet ids {duplicates[:5]}")
        metadata = msgspec.structs.replace(playbook.metadata, updated_at=datetime.datetime.now(datetime.UTC))
        saved = msgspec.structs.replace(playbook, metadata=metadata)
        data = msgspec.json.format(msgspec.json.encode(saved), indent=2) + b"\n"
        with self._lock:
            try:
                self.data_dir.mkdir(parents=True, exist_ok=True)
                _atomic_write(path, data)
            except OSError as exc:
                raise PlaybookStoreError(f"could not save playbook {dataset!r}: {exc.strerror or exc}") from None
        log.info("ace: playbook saved", dataset=dataset, bullets=len(saved.bullets))
        return saved

    def _corrupt(self, dataset: str, path: Path, reason: str) -> PlaybookCorrupt:
        log.error("ace: stored playbook is corrupt", dataset=dataset, file=path.name, reason=reason)
        return PlaybookCorrupt(f"stored playbook {dataset!r} ({path.name}) is corrupt: {reason}")


def _duplicate_ids(playbook: Playbook) -> list[str]:
    seen: set[str] = set()
    duplicates: list[str] = []
    for bullet in playbook.bullets:
        if bullet.id in seen:
            duplicates.append(bullet.id)
        seen.add(bullet.id)
    return duplicates


def _atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so readers see the old file or the new one, even across a crash."""
    fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
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
