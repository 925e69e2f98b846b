"""glibc's malloc gives every thread that allocates its own arena (up to 8
per core) and keeps freed memory in each: a server whose worker threads
take turns with large tensors then holds several copies of its peak. With
two arenas, resident memory levels off where the bounded caches say it
should (benchmarks/soak.py). Elsewhere than glibc this does nothing."""

from __future__ import annotations

import ctypes
import ctypes.util

M_ARENA_MAX = -8  # mallopt parameter number, from glibc's malloc.h
SERVER_ARENAS = 2


def limit_malloc_arenas(arenas: int = SERVER_ARENAS) -> bool:
    """Cap the arenas of threads started from now on; True where glibc took the setting."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    return bool(mallopt(M_ARENA_MAX, arenas))
