"""Give the C heap's free pages back to the system once embedding goes idle.

Why: with onnxruntime's arena off (decision 0047) every tensor of a batch is
malloc'd and freed, and glibc keeps freed memory in its heaps (each thread
has its own): after passages of 8 texts × 256 tokens a process kept 15 to
250 MB it no longer used, varying run to run with fragmentation, and the
same for the temporaries of building a session (about 60 MB from the
wheel's model). ``malloc_trim(0)`` releases every free page of every heap
(``madvise``), taking 1 to 6 ms; it is called when the embedding worker runs
out of work and after the model loads, never per query.

A no-op where the C library has no ``malloc_trim`` (musl, macOS).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def release_free_memory() -> bool:
    """Return the C heaps' free pages to the system; False where unsupported."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
