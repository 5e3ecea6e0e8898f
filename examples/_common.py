"""Shared command line and plotting for the examples: ``--smoke``, ``--out``, ``--seed``."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")  # examples write PNG files, never open windows

DEFAULT_OUT = Path(__file__).resolve().parent / "output"


def parse_args(doc: str, argv: list[str] | None = None,
               extra: dict[str, tuple[type, object, str]] | None = None) -> argparse.Namespace:
    """--smoke (seconds, for tests), --out DIR (PNG files), --seed, plus ``extra`` options."""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a tiny run that takes seconds")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where plots go")
    parser.add_argument("--seed", type=int, default=0)
    for name, (kind, default, help_text) in (extra or {}).items():
        parser.add_argument(f"--{name}", type=kind, default=default, help=help_text)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    args.started = time.perf_counter()
    return args


def save(fig, args: argparse.Namespace, name: str) -> Path:
    """Save ``fig`` as ``args.out/name`` and close it."""
    import matplotlib.pyplot as plt

    path = args.out / name
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def result(args: argparse.Namespace, text: str) -> None:
    """The line tests look for: ``RESULT: <text> (<seconds> s)``."""
    print(f"RESULT: {text} ({time.perf_counter() - args.started:.1f} s)")
