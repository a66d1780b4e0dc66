"""glibc's allocator settings (``mallopt`` through ``ctypes``): keep freed large tensors in the heap.

glibc hands out blocks over 32 MB (a batch of 512 Doom frames as float32 is 57 MB, the first convolution's
activations 35 MB) with ``mmap`` and returns them to the kernel on free, so every training step page-faults the same
memory in again: measured 20 ms for a 57 MB ``x / 255`` against 2.6 ms from reused heap memory. With mmap disabled
and a high trim threshold, freed blocks stay in the process and the next step reuses them. The learner (whose batch
tensors are the large ones) and the inference worker (a pass over 8 Doom frames allocated about 1 MB that glibc's
default trimming gave back and faulted in again at every pass: 445 page faults and 1.1 ms of CPU per pass of the
doom_basic model, 0.08 with this) call it; rollout workers and the runner keep glibc's defaults.

Verified on glibc 2.31-2.40 on Linux (``VERIFIED_GLIBC``); on another C library or version, or with
``SF_DISABLE_FAST_PATHS=all``, nothing is changed and the allocator keeps its defaults.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

from sample_factory.compat import disabled

VERIFIED_GLIBC = ((2, 31), (2, 40))  # inclusive range of (major, minor)
# mallopt() parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
HEAP_TRIM_THRESHOLD_BYTES = 1 << 30


def glibc_version() -> tuple[int, int] | None:
    """(major, minor) of the C library when it is glibc on Linux, else None."""
    if platform.system() != "Linux":
        return None
    name, version = platform.libc_ver()
    if name != "glibc":
        return None
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        return None
    return major, minor


def why_not_applied() -> str | None:
    """Why the allocator settings are not applied here, or None when they are."""
    switch = disabled("glibc_internals")
    if switch:
        return switch
    version = glibc_version()
    if version is None:
        return "the C library is not glibc on Linux"
    low, high = VERIFIED_GLIBC
    if not low <= version <= high:
        return f"glibc {version[0]}.{version[1]} is outside the verified {low[0]}.{low[1]}-{high[0]}.{high[1]}"
    return None


def reuse_freed_memory_for_large_tensors() -> bool:
    """Make glibc serve large CPU tensors from the heap instead of fresh ``mmap`` pages; True if applied."""
    if why_not_applied() is not None:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        ok_mmap = libc.mallopt(M_MMAP_MAX, 0) == 1
        ok_trim = libc.mallopt(M_TRIM_THRESHOLD, HEAP_TRIM_THRESHOLD_BYTES) == 1
    except (OSError, AttributeError):
        return False
    return ok_mmap and ok_trim
