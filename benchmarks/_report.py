"""Tables (Markdown) and plots (PNG) of a benchmark run, with the machine and versions."""

from __future__ import annotations

import os
import platform
from pathlib import Path

from ._frameworks import FRAMEWORKS, MEMORY_WORKLOADS, NUMPY_BASED
from ._problems import SIZES

LABELS = {"chainrule": "chainrule", "chainrule_jit": "chainrule jit", "autograd": "autograd",
          "torch": "PyTorch eager",
          "jax": "JAX eager", "jax_jit": "JAX jit", "numpy": "hand-written NumPy"}

DESCRIPTIONS = {
    "scalar_chain": "scalar chain, {chain_iters}x(sin, mul, add) on a Python float, grad",
    "mlp": "MLP {mlp[0]}-{mlp[1]}-{mlp[2]}-{mlp[3]}, batch {mlp[4]}, tanh, softmax CE, "
           "value_and_grad",
    "rnn": "vanilla tanh RNN, {rnn[0]} steps, batch {rnn[1]}, in {rnn[2]}, hidden {rnn[3]}, grad",
    "hessian": "full Hessian of sum(tanh(A x)) + ‖x‖²/2, n={hess_n}",
    "jacobian": "full Jacobian of tanh(B x), {jac[0]}x{jac[1]}",
    "tape_memory": "peak memory, grad of sum(X W^{tape[0]}), {tape[1]}x{tape[1]}",
    "checkpoint": "same, checkpoint over blocks of {block} steps",
}


FINDINGS_MARKER = "<!-- findings: hand-written, kept when the tables are regenerated -->"


def machine_info() -> dict:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform()}


def _cell(fw: str, name: str, res: dict) -> str:
    status = res.get("status", "?")
    if status in ("not installed", "n/a"):
        return status
    if status == "error":
        return f"error: {res.get('error', '')[:60]}"
    flag = "" if status == "ok" else f" **{status}** (err {res.get('max_rel_error', 0):.1e})"
    if name in MEMORY_WORKLOADS:
        return f"{res['peak_bytes'] / 2**20:.1f} MiB{flag}"
    if "us_per_primitive" in res:
        return f"{res['us_per_primitive']:.2f} µs/prim{flag}"
    return f"{res['median_s'] * 1e3:.2f} ms{flag}"


def _value(runs: dict, fw: str, name: str):
    res = runs["frameworks"].get(fw, {}).get("results", {}).get(name, {})
    if res.get("status") != "ok":
        return None
    return res["peak_bytes"] if name in MEMORY_WORKLOADS else res["median_s"]


def _ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def targets(runs: dict) -> list[tuple[str, str, float | None, bool | None]]:
    """(what, target, measured, met) for every target of issue 7."""
    v = lambda fw, name: _value(runs, fw, name)
    sc = runs["frameworks"].get("chainrule", {}).get("results", {}).get("scalar_chain", {})
    rows = [("scalar chain µs/primitive (chainrule)", "<= 2", sc.get("us_per_primitive"),
             lambda x: x <= 2),
            ("scalar chain autograd / chainrule", ">= 7",
             _ratio(v("autograd", "scalar_chain"), v("chainrule", "scalar_chain")),
             lambda x: x >= 7),
            ("scalar chain PyTorch / chainrule", "> 1",
             _ratio(v("torch", "scalar_chain"), v("chainrule", "scalar_chain")),
             lambda x: x > 1)]
    for name in ("mlp", "rnn"):
        rows.append((f"{name} chainrule / hand-written", "<= 1.15",
                     _ratio(v("chainrule", name), v("numpy", name)), lambda x: x <= 1.15))
        rows.append((f"{name} autograd / chainrule", "> 1",
                     _ratio(v("autograd", name), v("chainrule", name)), lambda x: x > 1))
    for name in ("hessian", "jacobian"):
        rows.append((f"{name} autograd / chainrule", ">= 3",
                     _ratio(v("autograd", name), v("chainrule", name)), lambda x: x >= 3))
    rows.append(("tape memory chainrule / hand-written", "<= 1.2",
                 _ratio(v("chainrule", "tape_memory"), v("numpy", "tape_memory")),
                 lambda x: x <= 1.2))
    rows.append(("checkpoint peak / no-checkpoint peak (chainrule)", "<= 0.5",
                 _ratio(v("chainrule", "checkpoint"), v("chainrule", "tape_memory")),
                 lambda x: x <= 0.5))
    return [(what, target, x, None if x is None else check(x))
            for what, target, x, check in rows]


def markdown(runs: dict, plots: list[str] = ()) -> str:
    fws = [fw for fw in FRAMEWORKS if fw in runs["frameworks"]]
    names = []
    for fw in fws:
        names += [n for n in runs["frameworks"][fw]["results"] if n not in names]
    sizes = SIZES[runs["scale"]]
    m = runs["machine"]
    lines = [
        f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, {m['platform']}. "
        f"Scale: `{runs['scale']}`. Single-threaded BLAS/XLA/torch, float64 everywhere. "
        f"Times are the median CPU time (process_time) of repeats after two warm-up runs "
        f"(the machine may be shared: CPU time does not count waiting for a core), from "
        f"the median of {runs.get('rounds', 1)} interleaved round(s) of all frameworks; every "
        f"result is checked against the hand-written gradient (max relative error <= 1e-6).",
        "",
        "Versions: " + ", ".join(f"{LABELS[fw]} {runs['frameworks'][fw]['version']}"
                                 for fw in fws),
        "",
        "| workload | " + " | ".join(LABELS[fw] for fw in fws) + " |",
        "|---|" + "---|" * len(fws),
    ]
    for name in names:
        cells = [_cell(fw, name, runs["frameworks"][fw]["results"].get(name, {"status": "n/a"}))
                 for fw in fws]
        lines.append(f"| {DESCRIPTIONS[name].format(**sizes)} | " + " | ".join(cells) + " |")
    mem_fws = [fw for fw in fws if fw in NUMPY_BASED]
    lines += ["", "Peak NumPy memory during one evaluation (MiB above the inputs, tracemalloc):",
              "", "| workload | " + " | ".join(LABELS[fw] for fw in mem_fws) + " |",
              "|---|" + "---|" * len(mem_fws)]
    for name in names:
        peaks = [runs["frameworks"][fw]["results"].get(name, {}).get("peak_bytes")
                 for fw in mem_fws]
        lines.append(f"| {name} | " + " | ".join(
            "—" if p is None else f"{p / 2**20:.2f}" for p in peaks) + " |")
    lines += ["", "Targets (issue 7), ratios measured in this run:", "",
              "| ratio | target | measured | met |", "|---|---|---|---|"]
    for what, target, x, met in targets(runs):
        shown = "—" if x is None else f"{x:.2f}"
        lines.append(f"| {what} | {target} | {shown} | "
                     f"{'—' if met is None else ('yes' if met else '**no**')} |")
    lines += [""] + [f"![{p}]({p})" for p in plots]
    return "\n".join(lines)


def write(runs: dict, out_dir: Path) -> None:
    """``out_dir``.md with the tables, ``out_dir``/*.png with the plots."""
    out_dir.mkdir(parents=True, exist_ok=True)
    plots = _plots(runs, out_dir)
    rel = [f"{out_dir.name}/{p}" for p in plots]
    intro = ("# Benchmarks\n\nGenerated by `python -m benchmarks --report docs/benchmarks` "
             "(see `benchmarks/`). Memory rows are the peak of NumPy allocations (tracemalloc) "
             "during forward + backward above what was alive before; PyTorch and JAX allocate "
             "outside tracemalloc's view, so they have no memory row. Every framework runs the "
             "same operations (no fused losses); chainrule and autograd use their `grad`, "
             "`value_and_grad`, `jacobian`, `hessian`, `checkpoint` (autograd: one backward "
             "pass per Jacobian row, reverse-over-reverse Hessian; chainrule: the function "
             "recorded once, its graph swept forward with the whole basis at once), PyTorch "
             "uses `torch.autograd.grad` and `torch.func.jacrev`/`hessian` (vmap-batched), "
             "JAX `jax.grad`, `jacrev`, `hessian` (batched), eager or under `jax.jit`.\n\n")
    doc = out_dir.with_suffix(".md")
    # Everything from the marker on is hand-written analysis: kept across regenerations.
    kept = ""
    if doc.exists() and FINDINGS_MARKER in doc.read_text():
        kept = "\n" + doc.read_text()[doc.read_text().index(FINDINGS_MARKER):]
    doc.write_text(intro + markdown(runs, rel) + "\n" + kept)


def _plots(runs: dict, out_dir: Path) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    fws = [fw for fw in FRAMEWORKS if fw in runs["frameworks"]]
    written = []

    timed = [n for n in ("mlp", "rnn", "hessian", "jacobian", "scalar_chain")
             if _value(runs, "numpy", n)]
    if timed:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        width = 0.8 / len(fws)
        for i, fw in enumerate(fws):
            ratios = [_ratio(_value(runs, fw, n), _value(runs, "numpy", n)) or 0 for n in timed]
            ax.bar([j + i * width for j in range(len(timed))], ratios, width, label=LABELS[fw])
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(timed))], timed)
        ax.set_yscale("log")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_ylabel("time / hand-written NumPy (log)")
        ax.set_title("Time relative to the hand-written gradient (lower is better)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out_dir / "time_ratios.png", dpi=110)
        plt.close(fig)
        written.append("time_ratios.png")

    us = [(LABELS[fw], runs["frameworks"][fw]["results"].get("scalar_chain", {}))
          for fw in fws]
    us = [(label, r["us_per_primitive"]) for label, r in us if r.get("status") == "ok"]
    if us:
        fig, ax = plt.subplots(figsize=(7, 3.5))
        ax.barh([label for label, _ in us], [x for _, x in us])
        ax.set_xscale("log")
        ax.axvline(2.0, color="r", ls="--", lw=0.8, label="target 2 µs")
        ax.set_xlabel("µs per primitive, forward + backward (log)")
        ax.set_title("Scalar chain")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out_dir / "scalar_chain.png", dpi=110)
        plt.close(fig)
        written.append("scalar_chain.png")

    mem = [(f"{LABELS[fw]}\n{n}", _value(runs, fw, n)) for n in MEMORY_WORKLOADS for fw in fws]
    mem = [(label, b) for label, b in mem if b]
    if mem:
        fig, ax = plt.subplots(figsize=(8, 3.8))
        ax.bar([label for label, _ in mem], [b / 2**20 for _, b in mem])
        ax.set_ylabel("peak MiB above inputs")
        ax.set_title("Peak memory during forward + backward (200-step matrix chain)")
        ax.tick_params(axis="x", labelsize=7)
        fig.tight_layout()
        fig.savefig(out_dir / "memory.png", dpi=110)
        plt.close(fig)
        written.append("memory.png")
    return written
