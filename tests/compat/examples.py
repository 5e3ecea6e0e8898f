"""Run autograd 1.9.1's example scripts, unchanged, on autograd and on chainrule.

    python -m tests.compat.examples                    # every example, 60 s limit each
    python -m tests.compat.examples --time-limit 20 --only gmm.py,rnn.py --markdown

Each example runs twice in a fresh working directory, with MPLBACKEND=Agg and single-threaded
BLAS: ``python example.py`` on the installed autograd, then the same file through the import
alias on chainrule from this checkout's src/. Nothing in an example is patched: long trainings
are cut by the time limit, and the numbers both runs printed before it are compared (the
first n of each, n the smaller count) to 6 significant digits. Examples that download data
(MNIST) are skipped and listed. Times are wall-clock on whatever else the machine runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import sdist

REPO = Path(__file__).resolve().parents[2]
HELPER_MODULES = {"__init__.py", "data.py", "data_mnist.py"}  # imported by examples, not run
_DOWNLOADS = re.compile(r"\b(load_mnist|mnist)\(")  # the examples' loaders fetch MNIST
# A number stands alone: the digits in "float64", "node_1399..." (an id) or "0x7f" are not one
_NUMBER = re.compile(
    r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?!\w)|(?<![\w.])[-+]?(?:nan|inf)\b")
# Why an example's printed numbers may differ from autograd's without a defect: what we
# measured on the run that docs/migrating.md shows.
NOTES: dict[str, str] = {
    "define_gradient.py": "unseeded: prints a gradient at npr.randn(10), new on every run",
    "deep_gaussian_process.py": "rounding drift: equal to 6 digits for 41 numbers, then the "
                                "6th digit of the L-BFGS objective differs",
    "fixed_points.py": "the second derivative through fixed_point's tolerance-stopped "
                       "iteration: both approximate -0.0883883, autograd -0.0881, chainrule "
                       "-0.0882",
    "gmm.py": "chaotic: Newton-CG drifts to another optimum after some iterations (rounding)",
    "gplvm.py": "rounding drift: the 6th digit of the objective differs after 39 numbers",
    "rnn.py": "chaotic: Adam (step 0.1) amplifies rounding; losses agree to 8 digits up to "
              "iteration 30, then follow another trajectory",
}


@dataclass
class Run:
    finished: bool  # exited with status 0 before the time limit
    timed_out: bool
    seconds: float
    stdout: str
    stderr: str

    @property
    def status(self) -> str:
        if self.finished:
            return "yes"
        return "time limit" if self.timed_out else "error"


def needs_download(script: Path) -> bool:
    return bool(_DOWNLOADS.search(script.read_text()))


def list_examples(examples_dir: Path) -> tuple[list[Path], list[Path]]:
    """(examples to run, examples skipped because they download data), sorted."""
    scripts = sorted(p for p in examples_dir.rglob("*.py") if p.name not in HELPER_MODULES)
    return ([p for p in scripts if not needs_download(p)],
            [p for p in scripts if needs_download(p)])


def printed_numbers(text: str) -> list[float]:
    return [float(token) for token in _NUMBER.findall(text)]


def compare_numbers(first: str, second: str) -> str:
    """Compare the numbers two runs printed, as far as both got, to 6 significant digits."""
    a, b = printed_numbers(first), printed_numbers(second)
    n = min(len(a), len(b))
    for i in range(n):
        same = (float(f"{a[i]:.6g}") == float(f"{b[i]:.6g}")
                or (math.isnan(a[i]) and math.isnan(b[i])))
        if not same:
            return f"differ at #{i + 1} of {n}: {a[i]:.6g} vs {b[i]:.6g}"
    if n == 0:
        return "none printed" if not (a or b) else "none in common"
    return f"equal ({n})" if len(a) == len(b) else f"equal (first {n} of {len(a)}/{len(b)})"


def complete_lines(text: str) -> str:
    """Drop a last line cut off by the time limit: its last number may be partial."""
    return text if text.endswith("\n") else text[:text.rfind("\n") + 1]


def run_example(command: list[str], env: dict[str, str], time_limit: float) -> Run:
    with tempfile.TemporaryDirectory(prefix="chainrule-example-") as workdir:
        start = time.perf_counter()
        try:
            done = subprocess.run(command, cwd=workdir, env=env, capture_output=True,
                                  timeout=time_limit)
        except subprocess.TimeoutExpired as stopped:
            seconds = time.perf_counter() - start
            out = complete_lines((stopped.stdout or b"").decode(errors="replace"))
            return Run(False, True, seconds, out, (stopped.stderr or b"").decode(errors="replace"))
        seconds = time.perf_counter() - start
    return Run(done.returncode == 0, False, seconds,
               done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"))


def environments() -> tuple[dict[str, str], dict[str, str]]:
    """(env for the real autograd, env for chainrule through the alias)."""
    base = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    base.update(MPLBACKEND="Agg", PYTHONUNBUFFERED="1", PYTHONHASHSEED="0",
                OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    alias_path = os.pathsep.join([str(REPO / "tests" / "compat"), str(REPO / "src")])
    return base, {**base, "PYTHONPATH": alias_path}


def format_time(run: Run) -> str:
    return f">{run.seconds:.0f}" if run.timed_out else f"{run.seconds:.1f}"


def table_rows(results: list[tuple[str, Run | None, Run]]) -> list[list[str]]:
    rows = []
    for name, on_autograd, on_chainrule in results:
        if on_autograd is None:
            rows.append([name, "not installed", on_chainrule.status, "-",
                         format_time(on_chainrule), "-", "-"])
            continue
        both = on_autograd.finished and on_chainrule.finished
        ratio = f"{on_chainrule.seconds / on_autograd.seconds:.2f}" if both else "-"
        numbers = compare_numbers(on_autograd.stdout, on_chainrule.stdout)
        note = NOTES.get(name)
        rows.append([name, on_autograd.status, on_chainrule.status, format_time(on_autograd),
                     format_time(on_chainrule), ratio, numbers + (f" ({note})" if note else "")])
    return rows


HEADER = ["example", "autograd", "chainrule", "autograd s", "chainrule s",
          "ratio cr/ag", "printed numbers (6 digits)"]


def format_markdown(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def format_text(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
                     for row in [HEADER, *rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.compat.examples", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--time-limit", type=float, default=60.0,
                        help="seconds per example and framework (default 60)")
    parser.add_argument("--only", default="", help="comma-separated example file names")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args(argv)
    try:
        root = sdist.fetch()
    except sdist.IndexUnreachable as err:
        print(f"SKIPPED: autograd {sdist.VERSION}'s sdist could not be downloaded from the "
              f"package index, so its examples were not run ({err})")
        return 0
    examples_dir = root / "examples"
    to_run, downloading = list_examples(examples_dir)
    if args.only:
        wanted = set(args.only.split(","))
        to_run = [p for p in to_run if p.name in wanted]
    autograd_env, chainrule_env = environments()
    has_autograd = importlib.util.find_spec("autograd") is not None
    results = []
    for script in to_run:
        name = str(script.relative_to(examples_dir))
        on_autograd = (run_example([sys.executable, str(script)], autograd_env, args.time_limit)
                       if has_autograd else None)
        on_chainrule = run_example([sys.executable, "-m", "autograd_alias", str(script)],
                                   chainrule_env, args.time_limit)
        results.append((name, on_autograd, on_chainrule))
        for label, run in (("autograd", on_autograd), ("chainrule", on_chainrule)):
            if run is not None and not run.finished and not run.timed_out:
                last = run.stderr.strip().splitlines()[-1:] or ["(no message)"]
                print(f"{name} fails on {label}: {last[0]}", file=sys.stderr)
    rows = table_rows(results)
    print(format_markdown(rows) if args.markdown else format_text(rows))
    print(f"time limit {args.time_limit:g} s per run; skipped (they download MNIST): "
          + ", ".join(str(p.relative_to(examples_dir)) for p in downloading))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
