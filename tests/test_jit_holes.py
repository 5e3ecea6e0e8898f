"""chainrule.jit's last contract holes (issue 32, session 5): static arguments that name
no parameter or are given the other way (by keyword, by position), arrays the function
reads through its defaults, a ``functools.partial`` or a callable object's attributes,
and outputs of a folded loop that must stay apart. Each test compares the jitted calls
with eager evaluation, called several times with the state changed in between."""

from __future__ import annotations

import functools

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from test_jit_contract import same

X = onp.array([0.1, 0.2, 0.3])


class Scale:
    """An object that is no pytree: an argument only where it is declared static."""

    def __init__(self, k: float):
        self.k = k


# ------------------------------------------------------------------ static arguments
@pytest.mark.parametrize("spec, message", [
    (dict(static_argnums=2), r"static_argnums names argument 2, but <lambda> takes 2 "
                             r"arguments by position \(x, m\)"),
    (dict(static_argnums=-3), r"names argument -3, but <lambda> takes 2"),
    (dict(static_argnames="scale"), r"static_argnames names 'scale', but <lambda> has no "
                                    r"parameter of that name \(its parameters: x, m\)"),
])
def test_a_static_argument_that_names_no_parameter_is_refused(spec, message):
    with pytest.raises(ValueError, match=message):
        cr.jit(lambda x, m: x * m.k, **spec)


def test_a_positional_only_parameter_cannot_be_a_static_name():
    def f(x, m, /):
        return x * m.k

    with pytest.raises(ValueError, match=r"takes 'm' by position only: name its place in "
                                         r"static_argnums"):
        cr.jit(f, static_argnames="m")
    same(cr.jit(f, static_argnums=1)(X, Scale(2.0)), X * 2.0)


def f_of_scale(x, m):
    return np.sin(x) * m.k


@pytest.mark.parametrize("declared", [dict(static_argnums=1), dict(static_argnames="m")])
def test_a_static_parameter_is_static_given_by_position_or_by_keyword(declared):
    jitted = cr.jit(f_of_scale, **declared)
    for m in (Scale(2.0), Scale(3.0)):
        same(jitted(X, m), f_of_scale(X, m))
        same(jitted(X, m=m), f_of_scale(X, m))
        same(jitted(x=X, m=m), f_of_scale(X, m))


def test_static_numbers_and_names_are_not_checked_against_star_args():
    by_number = cr.jit(lambda *a: a[0] * a[1].k, static_argnums=(1, 5))
    same(by_number(X, Scale(2.0)), X * 2.0)
    by_name = cr.jit(lambda x, **kw: x * kw["m"].k, static_argnames="m")
    same(by_name(X, m=Scale(3.0)), X * 3.0)


def test_a_static_parameter_left_to_its_default_is_read_as_eagerly():
    jitted = cr.jit(lambda x, n=3: x * n, static_argnums=1)
    same(jitted(X), X * 3)
    same(jitted(X, 4), X * 4)
    same(jitted(X, n=5), X * 5)


# ------------------------------------------------------------------ folded loops' outputs
def sharing(outputs: tuple, inputs: tuple) -> list[bool]:
    """For each pair of output arrays, and each output with each input: whether they share
    memory."""
    return [onp.shares_memory(a, b) for i, a in enumerate(outputs)
            for b in (*outputs[:i], *inputs)]


def each_step_reads_the_next_row(x):
    # q of step r is the call p makes at step r + 1: a folded loop shares one array
    # between them (a common subexpression) where neither is an output in its first steps
    acc = x[0] * 0.0
    ps, qs = [], []
    for r in range(10):
        p = np.sin(x[r] * 2.0)
        q = np.sin(x[r + 1] * 2.0)
        acc = np.cos(acc) + p * q
        ps.append(p)
        qs.append(q)
    return acc, ps[9], qs[8], ps[9][1:], qs[7]


def each_step_multiplies_a_row_by_one(x):
    # x[r] * 1.0 is x[r], bit for bit: dropped where it is no output, but the last step's
    # is an output, a new array, eagerly
    acc = x[0] * 0.0
    for r in range(10):
        y = x[r] * 1.0
        acc = np.cos(acc) + np.sin(y) * y - np.tanh(acc) * 0.5
    return acc, y


@pytest.mark.parametrize("f", [each_step_reads_the_next_row, each_step_multiplies_a_row_by_one])
def test_outputs_of_a_folded_loop_share_memory_only_where_they_do_eagerly(f):
    jitted = cr.jit(f)
    rows = onp.arange(36.0).reshape(12, 3) / 10
    for x in (rows, rows * 2.0, rows):
        want, got = f(x), jitted(x)
        same(got, want)
        assert sharing(got, (x,)) == sharing(want, (x,))
    assert jitted.cache_info().hits == 2
    assert " for i in range(" in jitted.lower(rows).source  # (still a loop)


# ------------------------------------------------------------------ values read at the call
def test_an_array_default_is_read_at_each_call_as_eagerly():
    weights = onp.array([1.0, 2.0, 3.0])
    offsets = onp.array([0.5, 0.5, 0.5])

    def f(x, w=weights, *, b=offsets):
        return np.sum(np.sin(x) * w) + np.sum(b * x)

    jitted = cr.jit(f)
    for k in range(3):
        same(jitted(X), f(X))
        same(jitted(X, b=offsets * 2.0), f(X, b=offsets * 2.0))
        weights[k] += 1.0  # (the default arrays change in place between calls)
        offsets[2 - k] = -k
    same(jitted(X), f(X))
    f.__defaults__ = (weights * 10.0,)  # (and the default itself is replaced)
    same(jitted(X), f(X))
    assert jitted.cache_info().misses == 2  # (left out, and b given: two signatures)


def test_a_method_reads_its_array_default_at_each_call():
    class Model:
        scale = onp.array([2.0, 2.0, 2.0])

        @cr.jit(static_argnums=0)
        def predict(self, x, w=scale):
            return np.tanh(x) * w

    model = Model()
    first = model.predict(X)
    Model.scale[0] = 5.0
    same(model.predict(X), onp.tanh(X) * Model.scale)
    same(first, onp.tanh(X) * 2.0)


def test_a_partial_or_an_object_changed_after_the_trace_is_named_by_the_sanitizer():
    weights = onp.array([1.0, 2.0, 3.0])

    def f(x, w):
        return np.sum(np.sin(x) * w)

    class Loss:
        def __init__(self):
            self.w = weights.copy()

        def __call__(self, x):
            return np.sum(np.sin(x) * self.w)

    loss = Loss()
    for fun, change in ((functools.partial(f, w=weights), lambda: weights.fill(7.0)),
                        (loss, lambda: setattr(loss, "w", loss.w * 2.0))):
        checked = cr.jit(fun, check=True)
        same(checked(X), fun(X))
        change()
        with pytest.raises(cr.jit.JitCheckError, match=r"(?s)argument 1 of multiply.*"
                           r"a functools.partial's arguments or an object's attributes are "
                           r"constants of the program: pass the array as an argument"):
            checked(X)


# ------------------------------------------------------------------ a constant's layout
def test_a_constant_fortran_array_keeps_its_layout_for_the_vjp_as_under_jit():
    # Eager evaluation kept a copy of a constant argument (of grad; a value of the program
    # under jit) in C order; LAPACK's triangular solve in the VJP takes another path for a
    # C-ordered matrix and a zero's update with it: -0.0 eagerly became 0.0 (the contract's
    # stats.multivariate_normal.pdf at x = ±1e308, whose density's cotangent is -0.0).
    from chainrule.scipy.linalg import solve_triangular

    def f(b, chol, w):
        return np.sum(solve_triangular(chol, b, lower=True) * w)

    chol = onp.asfortranarray([[2.0, 0.0, 0.0], [-0.5, 1.5, 0.0], [0.5, -0.5, 1.5]])
    w = onp.array([-0.0, -0.0, 0.0])
    g = cr.grad(f)
    eager = g(X, chol, w)
    same(cr.jit(g)(X, chol, w), eager)
    assert list(onp.signbit(eager)) == [True, True, False]


@pytest.mark.parametrize("make", [lambda a: a.reshape(3, 4)[:, ::2], lambda a: a[::-3],
                                  lambda a: a.reshape(2, 3, 2).transpose(2, 0, 1)[:, :, ::-1]])
def test_check_mode_copies_a_strided_argument_with_its_strides(make):
    """jit(f, check=True) runs f eagerly on copies of the arguments laid out as theirs
    (jit/_check.same_layout_copy): on NumPy 2 its np.byte_bounds was gone (AttributeError
    for any argument neither C- nor F-contiguous; explain's check met it too)."""
    from chainrule.jit._check import same_layout_copy

    x = make(onp.arange(12.0) * 0.37 - 1.0)
    copy = same_layout_copy(x)
    assert copy.strides == x.strides and not onp.shares_memory(copy, x)
    onp.testing.assert_array_equal(copy, x)
    f = lambda a: np.sum(np.sin(a) * a)  # noqa: E731
    jf = cr.jit(f, check=True)
    for _ in range(2):
        assert onp.asarray(jf(x)).tobytes() == onp.asarray(f(x)).tobytes()
