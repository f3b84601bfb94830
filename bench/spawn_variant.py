"""The service with its workers spawned, as uvicorn starts them: `bench.workers --compare-spawn`'s contrast.

`python -m bench.spawn_variant` runs `librarian_svc` unchanged except that each worker is a fresh
interpreter that imports everything itself, instead of a fork of the fork server that imported the
service's modules once (`librarian_svc/worker_process.py`). This is how the workers started before.
Never used in production.
"""

from __future__ import annotations

import sys

import librarian_svc.worker_process as worker_process

MODULE = "bench.spawn_variant"

if __name__ == "__main__":
    from librarian_svc.__main__ import main

    worker_process.START_METHOD = "spawn"
    sys.exit(main())
