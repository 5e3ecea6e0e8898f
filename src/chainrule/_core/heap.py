"""Keep the memory a reverse-mode graph takes from the C heap for the next graph (glibc).

A recording keeps its intermediates alive until the backward pass frees them, all at
once. With glibc's defaults that memory goes back to the kernel when it is freed: large
blocks are ``mmap``ed and unmapped, and ``free`` trims the heap's top once it exceeds the
trim threshold (128 KiB at first, at most 64 MiB as glibc adjusts it). The next gradient
then takes every page again through a page fault: half of an eager gradient of a few
hundred large-array operations (``benchmarks/gradbench/PROFILE.md``, P3).

``keeping_heap_growth()`` wraps a recording and its backward pass (and a Tensor's backward
pass: its recording is the user's statements, so only graphs below the 64 MiB the trim
threshold starts at are kept there), and jit's staging trace (so a process that only
runs jitted programs has the thresholds below set too). Before the process's
first recording the thresholds are set where glibc's own adjusting takes them at most:
mmap 32 MiB, trim 64 MiB on 64-bit (setting any threshold ends that adjusting for good,
which would otherwise leave them at 128 KiB: every array above that unmapped when freed,
every heap top above it trimmed). Then, when the heap's break (``sbrk(0)``: the end of
glibc's main heap) has grown while a recording or a backward pass ran, the trim threshold
is raised by that growth (``mallopt(M_TRIM_THRESHOLD)``), so the freed graph stays in the
heap for the next one.

Growth is counted per recording. Where the heap's free top at the end is larger than the
growth (it also takes in free chunks below the break the recording began at), the graph's
memory is trimmed all the same, and the next gradient grows the heap and raises the
threshold again, until the heap keeps it (on GradBench's ode and gmm the first gradient
already does). A nested recording's growth counts in the one around it too. The threshold, and
so the freed memory a process keeps, is at most 64 MiB plus the sum of what recordings
grew its heap by, and at most ``KEEP_AT_MOST`` (1 GiB, or an eighth of the machine's
memory if less); the process's peak does not change. The setting is the process's and is
not undone: glibc offers no way back to its adjusting thresholds, and a threshold restored
after each gradient gives the memory back at the next large ``free`` (measured: no gain).

Nothing happens where the C library is not glibc (macOS, Windows, musl), where the
process configures glibc's thresholds itself (``MALLOC_TRIM_THRESHOLD_``,
``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TOP_PAD_``, ``MALLOC_MMAP_MAX_`` or those tunables in
``GLIBC_TUNABLES``), or with ``KEEP_AT_MOST = 0`` set before the first gradient.
"""

from __future__ import annotations

import ctypes
import gc
import os
import threading
from collections.abc import Callable

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
_GLIBC_DEFAULT_TRIM = 128 * 1024
# glibc's DEFAULT_MMAP_THRESHOLD_MAX: the most its adjusting mmap threshold reaches
_MMAP_THRESHOLD = 4 * 1024 * 1024 * ctypes.sizeof(ctypes.c_long)
_USER_SETTINGS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_",
                  "MALLOC_MMAP_MAX_")
_USER_TUNABLES = ("glibc.malloc.trim_threshold", "glibc.malloc.mmap_threshold",
                  "glibc.malloc.top_pad", "glibc.malloc.mmap_max")


def _memory_eighth() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 8
    except (AttributeError, ValueError, OSError):
        return 1 << 30


# The most freed memory the heap keeps (bytes); 0: leave glibc's thresholds alone.
KEEP_AT_MOST: int = min(1 << 30, _memory_eighth())


def _startup_environment() -> dict:
    """The environment the process started with: the one glibc read its settings from
    (``os.environ`` may have changed since: Dask's nanny sets ``MALLOC_TRIM_THRESHOLD_``
    there for the workers it spawns)."""
    try:
        with open("/proc/self/environ", "rb") as file:
            entries = file.read().split(b"\0")
    except OSError:
        return dict(os.environ)
    return dict(entry.decode(errors="replace").partition("=")[::2] for entry in entries
                if entry)


class _CalledBreak:
    """The heap's break as ``sbrk(0)`` answers it, where glibc's ``__curbrk`` is not to be
    read."""

    __slots__ = ("sbrk",)

    def __init__(self, sbrk: Callable):
        self.sbrk = sbrk

    @property
    def value(self) -> int:
        return self.sbrk(0)


def _glibc() -> tuple[object | None, Callable | None]:
    """The heap's break (an object whose ``.value`` is ``sbrk(0)``) and glibc's
    ``mallopt``, or ``(None, None)`` elsewhere or where the process has set glibc's
    thresholds itself."""
    environment = _startup_environment()
    tunables = environment.get("GLIBC_TUNABLES", "")
    if any(name in environment for name in _USER_SETTINGS) or any(
            name in tunables for name in _USER_TUNABLES):
        return None, None
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 (glibc's own: musl has no such symbol)
        sbrk, mallopt = libc.sbrk, libc.mallopt
    except (OSError, TypeError, AttributeError):  # (Windows: CDLL(None) is a TypeError)
        return None, None
    sbrk.restype, sbrk.argtypes = ctypes.c_void_p, [ctypes.c_ssize_t]
    mallopt.restype, mallopt.argtypes = ctypes.c_int, [ctypes.c_int, ctypes.c_int]
    sbrk(0)  # (sets glibc's __curbrk where nothing has yet)
    try:
        # glibc's own record of the break, which sbrk(0) answers: read in place (~0.04 µs)
        # where a call of sbrk through ctypes costs ~0.2-0.4 µs, four times a gradient
        brk = ctypes.c_void_p.in_dll(libc, "__curbrk")
    except ValueError:
        brk = None
    return (_CalledBreak(sbrk) if brk is None or brk.value != sbrk(0) else brk), mallopt


_heap_break, _mallopt = _glibc()
_kept = _GLIBC_DEFAULT_TRIM  # the trim threshold (glibc's default until one is set)
_set = False  # whether this module has set the thresholds
_lock = threading.Lock()


def _fix_thresholds() -> None:
    """Before the process's first recording: the thresholds where glibc's own adjusting
    takes them at most (mmap 32 MiB, trim twice that), since setting one ends it."""
    global _set
    with _lock:
        if _set:  # (another thread's first recording, which waited here, set them)
            return
        _mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
        _set = True
    # (by the thread that set them alone, from glibc's default: two threads starting their
    # first gradients at once both read _kept before either raised it, and raised it twice)
    _keep(2 * _MMAP_THRESHOLD - _GLIBC_DEFAULT_TRIM)


def _keep(grown: int) -> None:
    """Raise the trim threshold by ``grown`` bytes, up to ``KEEP_AT_MOST``."""
    global _kept
    with _lock:
        # (mallopt takes a C int: a cap given as a float, 5e8, failed every gradient with
        # ctypes' "argument 2: TypeError: wrong type")
        wanted = int(min(_kept + grown, KEEP_AT_MOST, 2**31 - 1))
        if wanted > _kept:
            _mallopt(_M_TRIM_THRESHOLD, wanted)
            _kept = wanted


class _GraphMemory:
    """A context around a recording or a backward pass, whose class says what it does:
    keep what the block grew the heap by in the heap (``keeps_heap``), pause Python's
    cycle collector (``pauses_collection``), or both. (A class, not a generator: it runs
    twice per gradient, and a generator's context manager costs ~1 µs more each time.)"""

    __slots__ = ("start", "collecting")
    keeps_heap = False
    pauses_collection = False

    def __enter__(self) -> _GraphMemory:
        if self.pauses_collection:
            self.collecting = gc.isenabled()
            gc.disable()
        if not self.keeps_heap or _heap_break is None or KEEP_AT_MOST <= 0:
            self.start = None
            return self
        if not _set:
            _fix_thresholds()
        self.start = _heap_break.value
        return self

    def __exit__(self, *exc_info) -> None:
        if self.start is not None:
            self.keep_growth()
        if self.pauses_collection and self.collecting:
            gc.enable()

    def keep_growth(self) -> None:
        """Keep what the heap grew by since the block began (or since the last call) now,
        inside the block: grad's one block around a recording and its backward pass marks
        the end of the recording, the graph's growth, before the pass frees the graph."""
        start = self.start
        if start is not None:
            end = _heap_break.value
            if end > start:
                _keep(end - start)
            self.start = end


class keeping_heap_growth(_GraphMemory):
    """``with keeping_heap_growth():`` around a recording or a backward pass: what it grew
    the heap by stays in the heap."""

    __slots__ = ()
    keeps_heap = True


class no_cycle_collection(_GraphMemory):
    """Pause Python's cycle collector while a graph is recorded or swept.

    A recording makes a node, a box and an argument tuple per primitive and frees none of
    them until the backward pass; every 700 allocations the collector runs, and its older
    generations rescan the whole growing graph (40% of a 10^5-primitive gradient of small
    arrays). The graph holds no cycles, so reference counting frees it; collection
    resumes, as it was, when the block ends."""

    __slots__ = ()
    pauses_collection = True


class graph_memory(_GraphMemory):
    """Both: the one context around a reverse-mode recording and its backward pass."""

    __slots__ = ()
    keeps_heap = pauses_collection = True
