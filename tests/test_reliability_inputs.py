"""Nothing lost: no primitive or transform modifies the user's arrays or containers.

Every case of the spec tables (chainrule/_specs) is run under reverse mode and forward mode
with its array inputs made read-only (so any attempt to write raises) and laid out as
strided views into a larger buffer; afterwards every input, container, cotangent and
tangent must be bit-identical to a snapshot taken before.
"""

from __future__ import annotations

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import Tensor, grad, make_jvp, make_vjp
from chainrule._core.rules import defjvp, defvjp_direct
from chainrule._core.vspace import vspace
from chainrule._specs import Case
from chainrule.extend import primitive
from chainrule.numpy.numpy_wrapper import DIFFERENTIABLE
from test_rule_specs import CASES


def frozen(value, layout: str):
    """``value`` with every array read-only; as a strided view of a read-only buffer if
    ``layout == 'view'``. Containers are rebuilt with frozen elements."""
    if isinstance(value, onp.ndarray):
        if layout == "view":
            base = onp.empty(value.shape + (2,), value.dtype)
            base[..., 0] = value
            base[..., 1] = value
            base.setflags(write=False)
            out = base[..., 1]  # non-contiguous, and its base is read-only too
        else:
            out = value.copy()
            out.setflags(write=False)
        return out
    if isinstance(value, (list, tuple)):
        return type(value)(frozen(v, layout) for v in value)
    if isinstance(value, dict):
        return {k: frozen(v, layout) for k, v in value.items()}
    return value


def snapshot(value):
    """Everything that identifies ``value``'s content, down to the bits of its arrays."""
    if isinstance(value, onp.ndarray):
        base = value.base if value.base is not None else value
        return ("array", value.dtype.str, value.shape, value.strides, value.flags.writeable,
                value.tobytes(), onp.asarray(base).tobytes())
    if isinstance(value, (list, tuple)):
        return (type(value), tuple(id(v) for v in value), tuple(snapshot(v) for v in value))
    if isinstance(value, dict):
        return (dict, tuple(value), tuple(snapshot(v) for v in value.values()))
    if isinstance(value, (onp.generic, float, complex, int)):
        return (type(value), onp.asarray(value).tobytes())
    return (type(value), repr(value))


def read_only_like(value):
    """A read-only 'ones' cotangent/tangent for ``value`` (arrays, scalars or containers)."""
    ones = vspace(value).ones()
    return frozen(ones, "plain")


def problems(case, layout: str) -> list[str]:
    """What went wrong running ``case`` under make_vjp and make_jvp on frozen inputs."""
    found = []
    args = frozen(case.args, layout)
    kwargs = frozen(case.kwargs, layout)
    before = snapshot((args, kwargs))
    for argnum in case.argnums:
        f = lambda *a: case.fun(*a, **kwargs)
        try:
            vjp, ans = make_vjp(f, argnum)(*args)
            cotangent = read_only_like(ans)
            ct_before = snapshot(cotangent)
            vjp(cotangent)
            tangent = read_only_like(args[argnum])
            t_before = snapshot(tangent)
            make_jvp(f, argnum)(*args)(tangent)
        except Exception as err:  # noqa: BLE001 - every failure is collected and shown
            found.append(f"{case.id} argnum {argnum}: {type(err).__name__}: {err}")
            continue
        if snapshot(cotangent) != ct_before:
            found.append(f"{case.id} argnum {argnum}: the cotangent was modified")
        if snapshot(tangent) != t_before:
            found.append(f"{case.id} argnum {argnum}: the tangent was modified")
    if snapshot((args, kwargs)) != before:
        found.append(f"{case.id}: its inputs were modified")
    return found


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # np.cross of 2-vectors
@pytest.mark.filterwarnings("ignore:Output seems independent")
@pytest.mark.parametrize("layout", ["plain", "view"])
def test_no_spec_case_modifies_its_inputs(layout):
    failures = [problem for case in CASES for problem in problems(case, layout)]
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:40])


def test_every_differentiable_function_has_a_spec_case():
    # so that the check above runs every wrapped function, as the tables grow
    names = {name for group in DIFFERENTIABLE.values() for name in group.split()}
    assert names - {case.name for case in CASES} == set()


def test_the_check_catches_a_rule_that_writes_into_its_input():
    @primitive
    def scale(x):
        return 2.0 * x

    def bad_vjp(g, ans, x):
        x *= 1.0  # a rule that writes into the user's array
        return 2.0 * g

    def bad_jvp(t, ans, x):
        t += 0.0  # ... and into the user's tangent
        return 2.0 * t

    defvjp_direct(scale, bad_vjp)
    defjvp(scale, bad_jvp)
    case = Case("scale", scale, (onp.ones(3),))
    found = problems(case, "view")
    assert len(found) == 1 and "read-only" in found[0], found


def _fan_out_through_identities(x):
    # identity-like rules may pass the cotangent through unchanged; when the branches
    # are summed back, an in-place accumulation must not write into the user's array
    a = np.reshape(x, np.shape(x))
    b = +x
    c = np.squeeze(np.expand_dims(x, 0), 0)
    return a + b + c + x


def test_cotangent_passed_through_identities_is_not_written():
    x = frozen(onp.linspace(-1.0, 1.0, 6), "view")
    g = frozen(onp.arange(6.0), "view")
    before = snapshot((x, g))
    vjp, _ = make_vjp(_fan_out_through_identities)(x)
    onp.testing.assert_array_equal(vjp(g), 4.0 * onp.arange(6.0))
    _, t = make_jvp(_fan_out_through_identities)(x)(g)
    onp.testing.assert_array_equal(t, 4.0 * onp.arange(6.0))
    assert snapshot((x, g)) == before


def test_containers_of_parameters_are_unchanged_by_grad_of_grad():
    params = frozen({"w": onp.linspace(0.1, 1.0, 6).reshape(2, 3), "b": [0.5, onp.ones(3)]},
                    "view")
    before = snapshot(params)
    loss = lambda p: np.sum(np.tanh(p["w"] @ p["b"][1]) ** 2) * p["b"][0]
    g = grad(loss)(params)
    hvp_w = grad(lambda p: np.sum(grad(loss)(p)["w"]))(params)["w"]
    assert snapshot(params) == before
    assert g["w"].flags.writeable and not onp.shares_memory(g["w"], params["w"])
    assert hvp_w.shape == (2, 3)


def test_tensor_backward_leaves_user_arrays_and_gradient_alone():
    raw = frozen(onp.linspace(-1.0, 1.0, 4), "view")
    seed = frozen(onp.arange(4.0), "plain")
    before = snapshot((raw, seed))
    x = Tensor(raw)
    y = np.exp(x) + x + np.reshape(x, (4,))
    y.backward(gradient=seed)
    onp.testing.assert_allclose(x.grad.value, onp.arange(4.0) * (onp.exp(raw) + 2.0))
    x.grad.value  # the gradient is a fresh array, the leaf's value a copy of raw
    assert not onp.shares_memory(x.value, raw)
    assert snapshot((raw, seed)) == before
