"""Shared command line, BLAS threads, progress bars and plotting for the examples.

Options: ``--smoke``, ``--out``, ``--seed``, ``--blas-threads``. Optional packages (the
``examples`` extra, ``pip install -e ".[examples]"``): ``tqdm`` draws the progress bars,
plain progress lines replace them without it; ``threadpoolctl`` limits BLAS threads, without
it the examples say how to do it by hand.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")  # examples write PNG files, never open windows

DEFAULT_OUT = Path(__file__).resolve().parent / "output"
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_limits = None  # the active threadpoolctl limit, kept for the life of the process


def parse_args(
    doc: str,
    argv: list[str] | None = None,
    extra: dict[str, tuple[type, object, str]] | None = None,
) -> argparse.Namespace:
    """--smoke (seconds, for tests), --out DIR (plots), --seed, --blas-threads, plus ``extra``
    options. Limits the BLAS threads before the example computes anything."""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a tiny run that takes seconds")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where plots go")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--blas-threads",
        type=int,
        default=None,
        help="BLAS threads (default 1, unless OPENBLAS_NUM_THREADS, "
        "OMP_NUM_THREADS or MKL_NUM_THREADS is set)",
    )
    for name, (kind, default, help_text) in (extra or {}).items():
        parser.add_argument(f"--{name}", type=kind, default=default, help=help_text)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    limit_blas_threads(args.blas_threads)
    args.started = time.perf_counter()
    return args


def limit_blas_threads(threads: int | None = None) -> str:
    """Run BLAS with ``threads`` threads (default 1) and say so; returns the line printed.

    The examples multiply small matrices, where OpenBLAS's default thread pool made products
    20x slower on a shared 2-core machine (6 ms instead of 0.3 ms for 32x161 @ 161x384). A
    thread count set in the environment is left alone unless ``threads`` is given."""
    global _limits
    preset = [v for v in THREAD_VARIABLES if os.environ.get(v)]
    if threads is None and preset:
        line = f"BLAS threads: as set by {preset[0]}={os.environ[preset[0]]}"
    else:
        threads = 1 if threads is None else threads
        import numpy  # noqa: F401  (loads the BLAS library that threadpoolctl limits)

        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            line = (
                f"BLAS threads: library default (threadpoolctl is not installed: "
                f"pip install threadpoolctl, or set OPENBLAS_NUM_THREADS={threads})"
            )
        else:
            _limits = threadpool_limits(limits=threads, user_api="blas")
            line = f"BLAS threads: {threads} (threadpoolctl; --blas-threads N to change)"
    print(line)
    return line


class _PlainProgress:
    """What a progress bar shows, as a line on stderr every few seconds, without tqdm."""

    def __init__(self, total: int, desc: str, every: float = 5.0) -> None:
        self.total, self.desc, self.every = total, desc, every
        self.n, self.started = 0, time.perf_counter()
        self.shown = self.started

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.perf_counter()
        if now - self.shown >= self.every or self.n == self.total:
            self.shown = now
            elapsed = now - self.started
            left = elapsed / self.n * (self.total - self.n) if self.n else 0.0
            print(
                f"{self.desc}: {self.n}/{self.total} ({100 * self.n // max(self.total, 1)}%)"
                f" {elapsed:.0f} s, about {left:.0f} s left",
                file=sys.stderr,
                flush=True,
            )

    def write(self, line: str) -> None:
        print(line, flush=True)

    def close(self) -> None:
        pass

    def __enter__(self) -> _PlainProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def progress(total: int, desc: str):
    """A progress bar over ``total`` steps (``update()`` after each one, ``write(line)`` to
    print without breaking the bar); usable as a context manager. tqdm's bar when tqdm is
    installed, else a plain line on stderr every few seconds."""
    try:
        from tqdm import tqdm
    except ImportError:
        bar = _PlainProgress(total, desc)
    else:
        bar = tqdm(total=total, desc=desc, file=sys.stderr, mininterval=0.5, dynamic_ncols=True)
    return bar


def track(items: Iterable, desc: str, total: int | None = None) -> Iterator:
    """``items``, one by one, with a progress bar."""
    if total is None:
        total = len(items)  # type: ignore[arg-type]
    with progress(total, desc) as bar:
        for item in items:
            yield item
            bar.update()


def save(fig, args: argparse.Namespace, name: str) -> Path:
    """Save ``fig`` as ``args.out/name``, close it, and say where it went."""
    import matplotlib.pyplot as plt

    path = args.out / name
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    print(f"plot: {path.resolve()}")
    return path


def result(args: argparse.Namespace, text: str) -> None:
    """The line tests look for: ``RESULT: <text> (<seconds> s)``."""
    print(f"RESULT: {text} ({time.perf_counter() - args.started:.1f} s)")
