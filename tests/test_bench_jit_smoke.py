"""benchmarks.bench_jit at the tiny scale, in-process: every jitted workload equals eager
chainrule bit for bit (the benchmark checks it before timing), and every part runs."""

from benchmarks import bench_jit


def test_bench_jit_runs_and_checks_its_results():
    rows = bench_jit.workload_rows("tiny", 1)
    assert [r["name"] for r in rows] == list(bench_jit.WORKLOADS)
    for r in rows:
        assert r["prims"] > 0 and r["calls"] >= 0 and r["first"] > 0
    assert len(bench_jit.no_work_overhead(1)) == 3
    eager, jitted = bench_jit.adam_loop(5, 1)
    assert eager > 0 and jitted > 0
    bench_jit.jax_pairs(rows, 1)  # (does nothing where JAX is not installed)
    if bench_jit._jax_builders() is not None:
        assert all(r["jax"] > 0 and r["jit_by_jax"] > 0 for r in rows)
