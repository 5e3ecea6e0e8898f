"""The GradBench tool (benchmarks/gradbench): every eval's derivative, eager and jitted, on a
small input of the eval's form, through the tool's own JSON path, against central finite
differences of its own objective (kmeans against the closed form, hello against 2x).
GradBench itself is not needed; its validation against the manual C++ tool is the driver's.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy
import pytest
from benchmarks.gradbench import evals
from benchmarks.gradbench.protocol import evaluator

RNG_SEED = 20260101
STEP = 1e-6


@functools.cache
def tool(eval_name: str, jit: bool):
    return evaluator(evals.module(eval_name).functions(jit))


def call(eval_name: str, jit: bool, function: str, raw):
    raw = raw | {"min_runs": 1, "min_seconds": 0} if isinstance(raw, dict) else raw
    response = tool(eval_name, jit)(function, raw)
    assert response["success"], response.get("error")
    assert len(response["timings"]) >= 1
    return response["output"]


def small(eval_name: str):
    return evals.module(eval_name).small_input(numpy.random.default_rng(RNG_SEED))


def moved(raw: dict, key: str, direction: numpy.ndarray, step: float) -> dict:
    out = copy.deepcopy(raw)
    out[key] = (numpy.array(raw[key], dtype=float) + step * direction).tolist()
    return out


def directional_fd(objective, raw: dict, directions: dict[str, numpy.ndarray]) -> float:
    """(f(x + h v) - f(x - h v)) / 2h for a direction v over several input fields."""
    def at(sign):
        point = raw
        for key, direction in directions.items():
            point = moved(point, key, direction, sign * STEP)
        return objective(point)

    return (at(1) - at(-1)) / (2 * STEP)


def random_directions(raw: dict, keys) -> dict[str, numpy.ndarray]:
    rng = numpy.random.default_rng(7)
    return {key: rng.normal(size=numpy.shape(raw[key])) for key in keys}


# eval -> (objective, gradient, differentiated input fields, gradient fields as lists)
GRADIENT_EVALS = {
    "lse": ("primal", "gradient", ("x",), lambda g: {"x": g}),
    "llsq": ("primal", "gradient", ("x",), lambda g: {"x": g}),
    "det": ("primal", "gradient", ("A",), lambda g: {"A": g}),
    "gmm": ("objective", "jacobian", ("alpha", "mu", "q", "l"), lambda g: g),
    "lstm": ("objective", "jacobian", ("main_params", "extra_params"), None),
    "ode": ("primal", "gradient", ("x",), lambda g: {"x": g}),
}


def split_lstm(raw: dict, flat: list) -> dict:
    main = numpy.size(raw["main_params"])
    return {"main_params": flat[:main], "extra_params": flat[main:]}


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("eval_name", sorted(GRADIENT_EVALS))
def test_gradient_matches_finite_differences(eval_name, jit):
    primal, derivative, keys, as_fields = GRADIENT_EVALS[eval_name]
    raw = small(eval_name)
    objective = functools.partial(call, eval_name, jit, primal)
    if eval_name == "ode":  # the gradient is that of the last element of the solution
        def objective(point):
            return call(eval_name, jit, primal, point)[-1]
    gradient = call(eval_name, jit, derivative, raw)
    fields = split_lstm(raw, gradient) if eval_name == "lstm" else as_fields(gradient)
    directions = random_directions(raw, keys)
    predicted = sum(float(numpy.sum(numpy.reshape(fields[k], v.shape) * v))
                    for k, v in directions.items())
    assert predicted == pytest.approx(directional_fd(objective, raw, directions), rel=1e-5)
    assert call(eval_name, jit, derivative, raw) == gradient  # a second call, same answer


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_ba_jacobian_blocks(jit):
    raw = small("ba")
    jac = call("ba", jit, "jacobian", raw)
    n, m, p = raw["n"], raw["m"], raw["p"]
    # observation 0 sees camera 0 and point 0; its two rows have 15 entries each
    assert jac["rows"][:3] == [0, 15, 30] and jac["rows"][-1] == 31 * p
    assert jac["cols"][:15] == [*range(11), 11 * n, 11 * n + 1, 11 * n + 2, 11 * n + 3 * m]
    assert jac["cols"][-1] == 11 * n + 3 * m + p - 1
    # every camera, point and weight is the same input repeated, and observation 0 depends
    # on its own only: moving the shared input moves observation 0 by its block
    def residual(point):
        return numpy.array(call("ba", jit, "objective", point)["reproj_error"]["elements"])

    for key, offset, size in (("cam", 0, 11), ("x", 11, 3)):
        for j in range(size):
            direction = numpy.zeros(size)
            direction[j] = 1
            fd = directional_fd(residual, raw, {key: direction})
            assert [jac["vals"][offset + j], jac["vals"][15 + offset + j]] == pytest.approx(
                fd, rel=1e-5, abs=1e-7)
    fd_w = directional_fd(residual, raw, {"w": numpy.array(1.0)})
    assert [jac["vals"][14], jac["vals"][29]] == pytest.approx(fd_w, rel=1e-6)
    assert jac["vals"][-1] == pytest.approx(-2 * raw["w"])  # d(1 - w^2)/dw


@pytest.mark.parametrize("complicated", [False, True], ids=["simple", "complicated"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_ht_jacobian(jit, complicated):
    raw = evals.module("ht").small_input(numpy.random.default_rng(RNG_SEED), complicated)
    jac = numpy.array(call("ht", jit, "jacobian", raw))
    n_points = len(raw["data"]["points"])
    assert jac.shape == (3 * n_points, 28 if complicated else 26)

    def residuals(point):
        return numpy.array(call("ht", jit, "objective", point))

    theta_direction = random_directions(raw, ("theta",))
    fd = directional_fd(residuals, raw, theta_direction)
    assert jac[:, -26:] @ theta_direction["theta"] == pytest.approx(fd, rel=1e-5, abs=1e-8)
    if complicated:  # each point's own (u, v): all first coordinates moved at once, then second
        for column in range(2):
            direction = numpy.zeros((n_points, 2))
            direction[:, column] = 1
            fd = directional_fd(residuals, raw, {"us": direction})
            assert jac[:, column] == pytest.approx(fd, rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_kmeans_direction_is_the_closed_form(jit):
    raw = small("kmeans")
    points, centroids = numpy.array(raw["points"]), numpy.array(raw["centroids"])
    distances = ((points[:, None, :] - centroids[None]) ** 2).sum(axis=2)
    nearest = distances.argmin(axis=1)
    assert call("kmeans", jit, "cost", raw) == pytest.approx(distances.min(axis=1).sum())
    # gradient 2 sum (c_j - p_i) over cluster j, Hessian diagonal 2 |cluster j|
    means = numpy.array([points[nearest == j].mean(axis=0) for j in range(len(centroids))])
    direction = numpy.array(call("kmeans", jit, "dir", raw))
    assert direction == pytest.approx(centroids - means, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_hello(jit):
    assert call("hello", jit, "square", 3.0) == 9.0
    assert call("hello", jit, "double", 3.0) == 6.0
    assert call("hello", jit, "double", -0.5) == -1.0


# particle and saddle: a whole descent takes seconds to minutes, so the test checks the
# derivative the descent uses, through the inner simulation or descent: saddle in all four
# mode pairs, particle (seconds per variant) in one (its full runs, every variant eager and
# jitted, are checked by the driver against the eval's reference value)
@pytest.mark.parametrize("variant", ["fr"])
def test_particle_gradient(variant):
    from benchmarks.gradbench.evals.particle import Particle

    particle, ws = Particle(variant[0], variant[1], jit=False), numpy.array([0.1])
    fd = (particle.cost(ws + STEP) - particle.cost(ws - STEP)) / (2 * STEP)
    assert float(numpy.ravel(particle.gradient(ws))[0]) == pytest.approx(fd, rel=1e-5)


@pytest.mark.parametrize(("variant", "jit"), [("rr", False), ("ff", False), ("fr", False),
                                              ("rf", False), ("rr", True)])
def test_saddle_gradient(variant, jit):
    from benchmarks.gradbench.evals.saddle import Saddle

    p1, start = numpy.array([0.3, -0.2]), numpy.array([1.0, 1.0])
    direction = numpy.array([0.6, 0.8])
    saddle = Saddle(variant[0], variant[1], jit)
    fd = (saddle.cost(p1 + STEP * direction, start)
          - saddle.cost(p1 - STEP * direction, start)) / (2 * STEP)
    assert float(saddle.gradient(p1, start) @ direction) == pytest.approx(fd, rel=1e-5)


def test_unknown_eval_is_refused_by_name():
    with pytest.raises(LookupError, match="no implementation of the GradBench eval 'nope'"):
        evals.module("nope")


def session(lines: list[dict]) -> list[dict]:
    """The responses of the tool's command (as GradBench starts it) to a session."""
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.gradbench.tool"], cwd=root, text=True,
        input="".join(json.dumps(line) + "\n" for line in lines), capture_output=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(root / "src"), str(root)])),
        timeout=120)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_protocol_session_answers_every_message_by_id():
    lse = {"x": [1.0, 2.0, 3.0], "min_runs": 2, "min_seconds": 0}
    responses = session([
        {"id": 0, "kind": "start", "eval": "lse"},
        {"id": 1, "kind": "evaluate", "module": "lse", "function": "primal", "input": lse},
        {"id": 2, "kind": "define", "module": "nope"},
        {"id": 3, "kind": "define", "module": "lse"},
        {"id": 4, "kind": "evaluate", "module": "lse", "function": "gradient", "input": lse},
        {"id": 5, "kind": "analysis", "of": 4, "valid": True},
        {"id": 6, "kind": "evaluate", "module": "lse", "function": "hessian", "input": lse},
        {"id": 7, "kind": "evaluate", "module": "lse", "function": "primal",
         "input": {"x": [], "min_runs": 0, "min_seconds": 0}},
        {"id": 8, "kind": "end"},
    ])
    assert [r["id"] for r in responses] == list(range(8))
    assert responses[0]["tool"] == "chainrule"
    assert not responses[1]["success"] and "not defined" in responses[1]["error"]
    assert not responses[2]["success"] and "no implementation" in responses[2]["error"]
    assert responses[3]["success"]
    softmax = numpy.exp([1.0, 2.0, 3.0]) / numpy.exp([1.0, 2.0, 3.0]).sum()
    assert responses[4]["output"] == pytest.approx(softmax.tolist(), rel=1e-12)
    assert [t["name"] for t in responses[4]["timings"]] == ["evaluate", "evaluate"]
    assert responses[5] == {"id": 5}
    assert not responses[6]["success"] and "no function 'hessian'" in responses[6]["error"]
    # min_runs 0 still runs once; the max of an empty vector is NumPy's error, reported
    assert not responses[7]["success"] and "zero-size array" in responses[7]["error"]


def test_driver_scorings_from_a_log(tmp_path):
    from benchmarks.gradbench.driver import Outcome, load_run, tables

    # GradBench's default run stops at the first run that makes a second in all
    assert Outcome("f", "w", "valid", [1_500_000_000, 100, 100], 1.0).gradbench_default() == 1.5
    outcome = Outcome("f", "w", "valid", [300_000_000, 400_000_000, 500_000_000, 1], 1.0)
    assert outcome.gradbench_default() == pytest.approx(0.4)
    assert outcome.steady() == 1e-9
    log = [{"message": {"id": 0, "kind": "start"}}, {"response": {"id": 0}},
           {"message": {"id": 1, "kind": "define", "module": "lse"}},
           {"response": {"id": 1, "success": True}}]
    for i, (function, ns) in enumerate([("primal", [4000, 1000]), ("gradient", [9000, 3000])]):
        message = {"id": 2 + 2 * i, "kind": "evaluate", "module": "lse", "function": function,
                   "description": "n=3", "input": {"x": [1.0], "min_runs": 2, "min_seconds": 0}}
        timings = [{"name": "evaluate", "nanoseconds": t} for t in ns]
        log += [{"message": message},
                {"response": {"id": message["id"], "success": True, "timings": timings}},
                {"message": {"id": 3 + 2 * i, "kind": "analysis", "of": message["id"],
                             "valid": function == "primal", "error": None}},
                {"response": {"id": 3 + 2 * i}}]
    (tmp_path / "lse-chainrule.jsonl").write_text("".join(json.dumps(e) + "\n" for e in log))
    run = load_run("chainrule", tmp_path / "lse-chainrule.jsonl")
    assert [(o.function, o.status) for o in run.outcomes] == [("primal", "valid"),
                                                             ("gradient", "invalid")]
    report = tables("lse", [run], "chainrule")
    assert "- chainrule: 1 invalid, 1 valid" in report
    assert "| n=3 | invalid |" in report  # no ratio from an invalid derivative
    assert "| n=3 | 1 µs |" in report  # the primal's fastest run


def test_targets_table_takes_the_worst_workload():
    from benchmarks.gradbench.driver import Outcome, ToolRun, targets_table

    def run(tool, times):  # (workload, primal ns, gradient ns)
        return ToolRun(tool, [Outcome(f, w, "valid", [t], 1.0) for w, p, g in times
                              for f, t in (("primal", p), ("gradient", g))])

    runs = [run("chainrule", [("a", 10, 50), ("b", 10, 30)]),
            run("chainrule-jit", [("a", 10, 20), ("b", 20, 30)]),
            run("jax", [("a", 10, 40), ("b", 10, 10)])]
    row = targets_table({"lse": runs}).splitlines()[2]
    # jit/JAX worst 3 (b), no PyTorch, jit d/o worst 2 (a), eager d/o worst 5 (a),
    # first calls: jit/eager worst of primal and gradient, 2 (b's primal)
    assert row == "| lse | 3 | — | — | 2 | 5 | 2 |"
