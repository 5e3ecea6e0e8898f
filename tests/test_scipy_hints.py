"""A traced value passed to a plain SciPy function: the error names the SciPy function and
chainrule's differentiable version of it where there is one (issue 35), and the version it
names does differentiate the call."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as onp
import pytest

pytest.importorskip("scipy", reason="these errors come from SciPy's functions")
import scipy.integrate  # noqa: E402
import scipy.interpolate  # noqa: E402
import scipy.optimize  # noqa: E402
import scipy.special  # noqa: E402
import scipy.stats  # noqa: E402

import chainrule  # noqa: E402
import chainrule.numpy as np  # noqa: E402
from chainrule import Tensor, grad  # noqa: E402


def _message(fun, x=0.5) -> str:
    """The error grad(fun)(x) raises, with the error it was raised from (SciPy re-raises)."""
    with pytest.raises(Exception) as caught:
        grad(fun)(x)
    error = caught.value
    return f"{error} | {error.__cause__}"


USE = {
    "scipy.integrate.solve_ivp": lambda x: scipy.integrate.solve_ivp(
        lambda t, y: -x * y, (0.0, 1.0), [1.0]).y[0, -1],
    "scipy.integrate.quad": lambda x: scipy.integrate.quad(lambda t: x * t, 0.0, 1.0)[0],
    "scipy.optimize.minimize": lambda x: scipy.optimize.minimize(lambda z: (z - x) ** 2, 0.0).x[0],
    "scipy.stats.norm.pdf": lambda x: scipy.stats.norm.pdf(x),
    "scipy.stats.norm.logpdf": lambda x: scipy.stats.norm(0.0, 2.0).logpdf(x),  # frozen
    "scipy.linalg.expm": lambda x: scipy.linalg.expm(np.stack([np.stack([x, 0.0]),
                                                              np.stack([0.0, x])]))[0, 0],
}


@pytest.mark.parametrize("name", USE)
def test_the_error_names_chainrules_version(name):
    message = _message(USE[name])
    assert f"It happened in {name}, which works on plain values only: use chainrule.{name} " \
           f"instead" in message


def test_the_versions_named_differentiate_the_same_calls():
    import chainrule.scipy.integrate as cintegrate
    import chainrule.scipy.special as cspecial
    import chainrule.scipy.stats as cstats

    x = 1.7
    assert grad(cspecial.gammaln)(x) == pytest.approx(scipy.special.digamma(x), rel=1e-12)
    assert grad(cstats.norm.pdf)(x) == pytest.approx(-x * scipy.stats.norm.pdf(x), rel=1e-12)
    decay = grad(lambda k: cintegrate.solve_ivp(lambda t, y: -k * y, (0.0, 1.0), [1.0],
                                                rtol=1e-10, atol=1e-12).y[0, -1])
    assert decay(0.5) == pytest.approx(-math.exp(-0.5), rel=1e-6)  # d/dk exp(-k)


def test_a_scipy_function_without_a_version_is_named_too():
    message = _message(lambda x: scipy.interpolate.CubicSpline(
        [0.0, 1.0, 2.0], np.stack([x, x * x, x]))(0.5))
    assert "It happened in scipy.interpolate.CubicSpline, which works on plain values only, " \
           "and chainrule has no differentiable version of it" in message


def test_no_hint_where_scipy_is_not_where_it_failed():
    for fun in (lambda x: np.sum(onp.asarray(x)), lambda x: math.exp(x),
                # the user's own function, called by SciPy, converts the traced value itself
                lambda x: scipy.integrate.solve_ivp(lambda t, y: onp.asarray(x) * y,
                                                    (0.0, 1.0), [1.0]).y[0, -1]):
        assert "It happened in" not in _message(fun)


def _fresh(code: str) -> str:
    """What ``code`` prints in a new interpreter, where chainrule.scipy is not imported yet."""
    src = str(Path(chainrule.__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": src}, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("call", ["print(chainrule.grad(scipy.special.gammaln)(0.5))",
                                  "t = chainrule.Tensor(0.5); scipy.special.gammaln(t)"
                                  ".backward(); print(t.grad.item())"])
def test_a_scipy_special_function_differentiates_on_its_first_call(call):
    """chainrule.scipy is never imported by the user: the first traced call loads the rules
    (it used to raise once, naming chainrule.scipy.special.gammaln, then work)."""
    printed = _fresh(f"import scipy.special, chainrule\n{call}\n")
    assert float(printed) == pytest.approx(scipy.special.digamma(0.5), rel=1e-12)


@pytest.mark.parametrize("call", ["chainrule.grad(scipy.special.ellipkm1)(0.5)",
                                  "scipy.special.ellipkm1(chainrule.Tensor([0.5, 0.7]))"])
def test_a_scipy_special_function_without_a_rule_on_a_traced_value_or_a_tensor(call):
    message = _fresh(
        "import scipy.special, chainrule\n"
        "try:\n"
        f"    {call}\n"
        "except TypeError as error:\n"
        "    print(error)\n"
    )
    assert "It happened in scipy.special.ellipkm1, which works on plain values only, and " \
           "chainrule has no differentiable version of it" in message
    assert "the ufunc ellipkm1" in message and "numpy.ellipkm1" not in message


def test_a_tensor_passed_to_a_scipy_function():
    with pytest.raises(TypeError, match="It happened in scipy.integrate.trapezoid"):
        scipy.integrate.trapezoid(Tensor([0.5, 1.5]))
