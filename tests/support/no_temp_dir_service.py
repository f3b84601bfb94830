"""`python -m tests.support.no_temp_dir_service`: the real service where no temporary directory is usable.

As on a read-only root file system (`docker run --read-only`, Kubernetes' `readOnlyRootFilesystem`):
`tempfile` finds no writable directory, so neither the fork server (its socket lives in one) nor anything
else can make one. Patched at import, so spawned workers (which import this module as `__mp_main__`) are
in the same situation as their supervisor. Served exactly as the service is (`librarian_svc.__main__.main`).
"""

from __future__ import annotations

import errno
import sys
import tempfile

from librarian_svc.__main__ import main


def _no_usable_temporary_directory() -> str:
    """What `tempfile` raises when none of its candidate directories can be written."""
    raise FileNotFoundError(errno.ENOENT, "No usable temporary directory found (a read-only file system)")


tempfile.tempdir = None
tempfile._get_default_tempdir = _no_usable_temporary_directory  # type: ignore[attr-defined]

if __name__ == "__main__":
    sys.exit(main())
