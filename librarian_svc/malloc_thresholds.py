"""Fix glibc's two malloc thresholds for serving, so a worker stops handing pages back that it needs again at once.

glibc adjusts both thresholds by itself: each time a block it had `mmap`ed is freed, the size above which
it `mmap`s blocks rises to that block's size, and the free space at the top of the heap that `free()` gives
back to the kernel rises to twice that. How they end up depends on the order of the process's allocations,
and some orders leave them low: then every step `mmap`s its larger blocks afresh or shrinks the heap only
to grow it again, and each returned page costs a page fault when it is touched next. A worker serving the
Librarian's three-round (161 KB) step on 8 connections took **68-713 minor faults a step** in session 26,
with 0.29-1.96 ms of system time in a ~10 ms step, from one start of the service to the next (bursts of
hundreds in five runs of seven); with the thresholds fixed at these values, **53-60** and 0.35-0.38 ms in
three runs of three (`getrusage` in the worker, runs alternating with the default, the values given as
`GLIBC_TUNABLES`), and 80 / 112 in two runs with this module setting them as the worker starts.

The values: blocks under `MMAP_THRESHOLD_BYTES` come from the heap (a step's body, its arrays and lists,
all well under 1 MiB), larger ones (an ACE request's embedding matrices) are still `mmap`ed and returned
whole when freed. `free()` gives the heap's top back only once `TRIM_THRESHOLD_BYTES` is free there, above
what eight concurrent steps swing it by; what a burst of heavy requests leaves is handed back by the
explicit `malloc_trim` after them (`memory_budget`), which ignores this threshold. In the same session
160 of the heaviest ACE searches at once peaked at 1,128 / 1,066 MB with these values, against 1,127 /
1,245 MB without (`bench.memory_admission --skip-single --skip-baseline`); 32 MiB for the mmap threshold
and 256 MiB for the trim threshold also removed the faults but peaked at 1,262 / 1,323 MB. Fixing
either threshold alone was worse than neither (1,000-2,000 faults a step): fixing one stops glibc
adjusting the other, which then stays at its low start value.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

M_TRIM_THRESHOLD = -1
"""`mallopt`'s parameter number for the trim threshold (glibc's `malloc.h`)."""
M_MMAP_THRESHOLD = -3
"""`mallopt`'s parameter number for the mmap threshold (glibc's `malloc.h`)."""

TRIM_THRESHOLD_BYTES = 64 * 1024 * 1024
MMAP_THRESHOLD_BYTES = 1024 * 1024


def libc_function(name: str) -> Callable[..., int] | None:
    """A function of the C library by name (`mallopt`, `malloc_trim`: glibc's), or None where it has none (musl, macOS).

    Looked up among the symbols the process already has (`CDLL(None)`), not with `find_library`, which
    may run `ldconfig` in a subprocess at import time, during the cold start.
    """
    try:
        found: Callable[..., int] | None = getattr(ctypes.CDLL(None), name, None)
    except OSError:
        return None
    return found


def fix_malloc_thresholds(mallopt: Callable[[int, int], int] | None = None) -> bool:
    """Set both thresholds (glibc); True when both were accepted, False where there is no `mallopt` or it refused."""
    setter = mallopt if mallopt is not None else libc_function("mallopt")
    if setter is None:
        return False
    trim_set = setter(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1
    mmap_set = setter(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
    return trim_set and mmap_set
