"""A long-running server's heap: glibc's fixed mmap threshold, so that freed tensors go back.

glibc serves an allocation above its mmap threshold with its own mapping, returned to the system
when freed; but each such free raises the threshold (up to 32 MiB), so later tensors, such as
a stream's evidence caches, come from the heap, whose freed gaps the process keeps. A server that
runs for hours then grows by what fragmentation holds. :func:`keep_heap_returnable` fixes the
threshold (and returns freed heap tops at once), as ``MALLOC_MMAP_THRESHOLD_=65536
MALLOC_TRIM_THRESHOLD_=0`` would; what an operator sets in those variables wins.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (malloc.h)
MMAP_THRESHOLD = 64 * 1024  # bytes: a tensor of this size or more gets its own mapping


def keep_heap_returnable() -> bool:
    """Fix glibc's mmap and trim thresholds, unless the environment sets them; False where the C
    library is not glibc (nothing to do) or the operator set them."""
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return False
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = libc.mallopt if libc is not None else None
    except (OSError, AttributeError):  # not glibc (musl, macOS): their allocators differ
        return False
    if mallopt is None:
        return False
    done = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, 0))
    if done:
        log.debug("glibc heap: mmap threshold %d bytes, trim threshold 0", MMAP_THRESHOLD)
    return done
