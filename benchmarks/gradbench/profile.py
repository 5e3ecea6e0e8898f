"""Where chainrule's time goes on a GradBench eval: ``python -m benchmarks.gradbench.profile``.

    python -m benchmarks.gradbench.profile lstm          # times, per-op costs, cProfile tops
    python -m benchmarks.gradbench.profile lstm --phase "eager gradient" --times 2
        # one phase only, for valgrind --tool=callgrind: the instructions of one steady run
        # are those of --times 2 less those of --times 1 (of one first call: --times 1 less
        # --phase setup)

For the eval's objective and its gradient, on an input of the eval's form (the sizes below,
no GradBench needed), it measures by CPU time (min of ``--repeats``): the untraced objective;
the eager gradient split into the forward pass that records the graph (``make_vjp``) and
the backward pass; ``jit``'s first call (trace, emit, compile, run) and its cached call; the
number of primitives recorded, and so the cost per recorded primitive of each pass; then
cProfile's top functions by own time for the eager gradient and for jit's first call.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy  # noqa: E402

import chainrule  # noqa: E402

from ..profile import best_cpu_ms, count_nodes  # noqa: E402
from . import evals  # noqa: E402

RNG = numpy.random.default_rng(31337)


def lstm_case(layers: int = 2, chars: int = 1024, bits: int = 14):
    module = evals.module("lstm")
    args = (RNG.random((2 * layers, 4 * bits)), RNG.random((3, bits)),
            RNG.random((2 * layers, bits)), RNG.integers(0, 2, (chars, bits)).astype(float))
    return f"lstm l={layers} c={chars} b={bits}", module.lstm_loss, (0, 1), args


def ode_case(n: int = 10000, s: int = 10):
    return f"ode n={n} s={s}", evals.module("ode").last, 0, (RNG.random(n), s)


def gmm_case(d: int = 10, k: int = 25, n: int = 1000):
    module = evals.module("gmm")
    raw = module.small_input(RNG) | {"d": d, "k": k, "n": n}
    raw |= {"x": RNG.normal(size=(n, d)), "alpha": RNG.normal(size=k),
            "mu": RNG.uniform(size=(k, d)), "q": RNG.normal(size=(k, d)),
            "l": RNG.normal(size=(k, d * (d - 1) // 2))}
    return f"gmm d={d} k={k} n={n}", module.log_posterior, (0, 1, 2, 3), module.prepare(raw)


def lse_case(n: int = 2500):  # (GradBench's smallest: a 7 µs objective)
    return f"lse n={n}", evals.module("lse").logsumexp, 0, (RNG.random(n),)


def det_case(ell: int = 5):  # (GradBench's smallest)
    module = evals.module("det")
    raw = {"ell": ell, "A": RNG.random(ell * ell).tolist()}
    return f"det ell={ell}", module.det_by_minors, 0, module.prepare(raw)


def kmeans_case(k: int = 10, n: int = 1000, d: int = 8):
    points = RNG.random((n, d))
    return (f"kmeans k={k} n={n} d={d}", evals.module("kmeans").cost, 1,
            (points, points[-k:].copy()))  # (centroids from the points, as the eval's input)


CASES = {"lstm": lstm_case, "ode": ode_case, "gmm": gmm_case, "kmeans": kmeans_case,
         "lse": lse_case, "det": det_case}


def derivative(eval_name: str, objective, argnum):
    """The derivative an eval times: the objective's gradient, but for kmeans the Newton
    direction (the gradient and the Hessian's diagonal, jvp of grad)."""
    if eval_name == "kmeans":
        return evals.module("kmeans").newton_direction
    return chainrule.grad(objective, argnum=argnum)


# The same derivative in GradBench's PyTorch tool (``gradbench.tools.pytorch``): its module,
# function and the raw input of the case's arguments (compare_trees --pytorch).
PYTORCH_MESSAGES = {
    "kmeans": lambda args: ("kmeans", "dir", {"points": args[0].tolist(),
                                              "centroids": args[1].tolist()}),
    "gmm": lambda args: ("gmm", "jacobian", {
        "d": args[4].shape[1], "k": args[0].shape[0], "n": args[4].shape[0],
        "x": args[4].tolist(), "m": args[6], "gamma": args[5], "alpha": args[0].tolist(),
        "mu": args[1].tolist(), "q": args[2].tolist(), "l": args[3].tolist()}),
}


def phases(objective, argnum, args, eval_name: str = ""):
    """Each phase as a thunk; ``first call`` makes a fresh jit each time. The "gradient"
    is the eval's derivative (``derivative``)."""
    gradient = derivative(eval_name, objective, argnum)
    jitted = chainrule.jit(gradient)  # compiled by its first call

    def forward():
        return chainrule.make_vjp(objective, argnum)(*args)

    return {"setup": lambda: None,
            "objective": lambda: objective(*args),
            "forward (record)": forward,
            "eager gradient": lambda: gradient(*args),
            "jit first call": lambda: chainrule.jit(gradient)(*args),
            "jit cached call": lambda: jitted(*args)}


def report(the_case, repeats: int, eval_name: str = "") -> None:
    label, objective, argnum, args = the_case
    runs = phases(objective, argnum, args, eval_name)
    nodes = count_nodes(lambda: derivative(eval_name, objective, argnum)(*args))
    times = {}
    for name, run in runs.items():
        if name != "setup":  # (best_cpu_ms runs it once before the samples)
            times[name] = best_cpu_ms(run, repeats if "first" not in name
                                      else max(2, repeats // 2)) / 1e3
        if name == "forward (record)":  # the backward pass alone: a recording per sample
            samples = []
            for _ in range(repeats):
                vjp, _ = run()
                start = time.process_time()
                vjp(1.0)
                samples.append(time.process_time() - start)
            times["backward"] = min(samples)
    print(f"{label}: {nodes} primitives recorded by the gradient\n")
    print("| phase | CPU time | / objective | per recorded primitive |")
    print("|---|---|---|---|")
    for name, t in times.items():
        per = f"{t / nodes * 1e6:.2f} µs" if name != "objective" else "—"
        print(f"| {name} | {t * 1e3:.2f} ms | {t / times['objective']:.1f} | {per} |")
    for name in ("eager gradient", "jit first call"):
        print(f"\ncProfile, {name} (own time):")
        profile = cProfile.Profile()
        profile.runcall(runs[name])
        pstats.Stats(profile).sort_stats("tottime").print_stats(14)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gradbench.profile",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("eval", choices=sorted(CASES))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--times", type=int, default=1, help="with --phase: runs of it")
    parser.add_argument("--chars", type=int, default=1024, help="lstm: the sequence length")
    parser.add_argument("--phase", help="run one phase once and nothing else, for valgrind: "
                        "setup, objective, forward (record), backward (after a forward), "
                        "eager gradient, jit first call, jit cached call")
    args = parser.parse_args(argv)
    if args.phase:
        label, objective, argnum, case_args = case(args)
        run = phases(objective, argnum, case_args, args.eval)
        for _ in range(args.times):
            if args.phase == "backward":  # a forward pass and its backward pass
                vjp, _ = run["forward (record)"]()
                vjp(1.0)
            else:
                run[args.phase]()
        return
    report(case(args), args.repeats, args.eval)


def case(args):
    return lstm_case(chars=args.chars) if args.eval == "lstm" else CASES[args.eval]()


if __name__ == "__main__":
    main()
