"""chainrule.jit's last contract holes (issue 32, session 5): static arguments that name
no parameter or are given the other way (by keyword, by position), arrays the function
reads through its defaults, a ``functools.partial`` or a callable object's attributes,
and outputs of a folded loop that must stay apart. Each test compares the jitted calls
with eager evaluation, called several times with the state changed in between."""

from __future__ import annotations

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
