"""A pattern found for the values a function reads from outside x (globals, closure cells)
is not reused once those values change: rebound to a new object, changed in place, or
both, including where the call that first meets the change raises (the long run's cases
2,224 and 9,602 of the sparse contract at 30c997c: the check took the new values as seen
before the record that raised, and the next call reused the old pattern). Each sparse
result is compared with the dense derivative of the function as it is at that call."""

from __future__ import annotations

import collections

import numpy as onp
import pytest

import chainrule
import chainrule.numpy as np

X = onp.array([0.3, 0.2, -0.1, 0.4, 0.7])
FAILS = onp.array([-2.0, 0.2, 0.1, 0.1, 0.3])  # cholesky of diag(x[:2] + 0.5) raises here
P = onp.array([2, 0, 1, 3, 4])  # the permutation the functions below read, rebound by tests
PERMUTATIONS = [onp.array([4, 3, 0, 1, 2]), onp.array([1, 2, 3, 4, 0])]


def permuted(u):
    chol = np.linalg.cholesky(np.diag(u[:2] + 0.5))  # raises at FAILS, deciding nothing
    return u[P] * u * np.sum(chol)


def permuted_objective(u):
    # (cholesky's gradient would guard the Hessian's pattern: recorded at every x anyway)
    with onp.errstate(invalid="raise"):  # a log of a negative raises at FAILS
        return np.sum(u[P] * u * u) + np.log(u[0] + 1.0)  # entries (i, P[i]), (i, i)


JACOBIANS = {
    "jacobian(sparse=True)": lambda f, x: chainrule.jacobian(f, sparse=True),
    "forward": lambda f, x: chainrule.SparseJacobian(f, x, mode="forward"),
    "reverse": lambda f, x: chainrule.SparseJacobian(f, x, mode="reverse"),
    "staged": lambda f, x: chainrule.SparseJacobian(f, x, staged=True),
    "local": lambda f, x: chainrule.SparseJacobian(f, x, local=True),
}
HESSIANS = {
    "hessian(sparse=True)": lambda f, x: chainrule.hessian(f, sparse=True),
    "star": lambda f, x: chainrule.SparseHessian(f, x, colouring="star"),
    "acyclic": lambda f, x: chainrule.SparseHessian(f, x, colouring="acyclic"),
}


@pytest.fixture
def restore_p():
    global P
    before = P
    yield
    P = before


def _check(evaluator, fun, x, hessian=False) -> None:
    dense = (chainrule.hessian if hessian else chainrule.jacobian)(fun)(x)
    onp.testing.assert_allclose(evaluator(x).toarray(), dense, rtol=1e-13, atol=1e-14)


def _raises_at_fails(evaluator, error=onp.linalg.LinAlgError) -> None:
    with pytest.raises(error):
        evaluator(FAILS)


@pytest.mark.parametrize("make", JACOBIANS.values(), ids=JACOBIANS.keys())
@pytest.mark.parametrize("how", ["rebound", "in place", "in place then rebound"])
def test_a_global_array_changed_where_the_next_call_raises(make, how, restore_p):
    global P
    jac = make(permuted, X)
    _check(jac, permuted, X)
    for new in PERMUTATIONS:
        if how == "rebound":
            P = new.copy()
        elif how == "in place":
            P[...] = new
        else:
            P[...] = new[::-1]
            _raises_at_fails(jac)  # (it has seen the in-place change)
            P = new.copy()
        _raises_at_fails(jac)
        _check(jac, permuted, X)  # the call after the one that raised
        _check(jac, permuted, X[::-1].copy())


@pytest.mark.parametrize("make", HESSIANS.values(), ids=HESSIANS.keys())
def test_a_global_array_rebound_where_the_next_hessian_raises(make, restore_p):
    global P
    hess = make(permuted_objective, X)
    _check(hess, permuted_objective, X, hessian=True)
    for new in PERMUTATIONS:
        P = new.copy()
        _raises_at_fails(hess, FloatingPointError)
        _check(hess, permuted_objective, X, hessian=True)


SHIFT = [1, 2, 3, 4, 0]  # a global list read as an index


def shifted(u):
    np.linalg.cholesky(np.diag(u[:2] + 0.5))
    return u[SHIFT] * u


@pytest.mark.parametrize("make", JACOBIANS.values(), ids=JACOBIANS.keys())
def test_a_global_list_rebound_and_changed_in_place(make):
    global SHIFT
    before = SHIFT
    try:
        jac = make(shifted, X)
        _check(jac, shifted, X)
        SHIFT = [4, 0, 1, 2, 3]
        _raises_at_fails(jac)
        _check(jac, shifted, X)
        SHIFT[0], SHIFT[1] = SHIFT[1], SHIFT[0]  # in place
        _raises_at_fails(jac)
        _check(jac, shifted, X)
    finally:
        SHIFT = before


def _with_a_cell(perm):
    """A function reading ``perm`` from a closure cell, and a setter rebinding the cell."""
    def fun(u):
        np.linalg.cholesky(np.diag(u[:2] + 0.5))
        return np.dot(onp.diag(weights)[perm], u) * u

    def rebind(new_perm, new_weights):
        nonlocal perm, weights
        perm, weights = new_perm, new_weights

    weights = onp.array([1.0, 0.0, 2.0, 0.0, -1.0])
    return fun, rebind


@pytest.mark.parametrize("make", JACOBIANS.values(), ids=JACOBIANS.keys())
def test_a_closure_cell_rebound(make):
    fun, rebind = _with_a_cell(onp.array([0, 1, 2, 3, 4]))
    jac = make(fun, X)
    _check(jac, fun, X)
    rebind(onp.array([3, 4, 0, 2, 1]), onp.array([0.0, 1.5, 0.0, 0.0, 2.0]))
    _raises_at_fails(jac)
    _check(jac, fun, X)
    rebind(onp.array([1, 0, 4, 3, 2]), onp.array([-1.0, 0.0, 3.0, 0.5, 0.0]))
    _check(jac, fun, X)  # (rebound again, no call raising in between)
    _check(jac, fun, X + 0.1)


def test_the_contract_cases_2224_and_9602():
    """The two cases of the long run, as generated (the harness's own check)."""
    from tests.contracts import contracts
    from tests.contracts._runner import run

    sparse = contracts()["sparse"]
    for index in (2224, 9602):
        report = run(sparse, 1, seed=0, start=index)
        assert not report.failures, str(report.failures[0])


# --------------------------------------------------------------- rebound to equal values

ORDER = onp.array([1, 0, 3, 2, 4])
ORDER_LIST = [1, 0, 3, 2, 4]
SCALE = 2.0
CALLS: collections.deque = collections.deque()  # (not a list: a list it reaches is state)


def reordered(u):
    CALLS.append(1)
    return u[ORDER] * u * SCALE + u[ORDER_LIST[::-1]]


def _calls_of(evaluator, fun, x) -> int:
    CALLS.clear()
    values = evaluator(x).toarray()
    onp.testing.assert_allclose(values, chainrule.jacobian(fun)(x), rtol=1e-13, atol=1e-14)
    return len(CALLS)


@pytest.mark.parametrize("staged", [False, True])
def test_a_rebinding_to_an_equal_value_records_nothing_more(staged):
    global ORDER, ORDER_LIST, SCALE
    before = ORDER, ORDER_LIST, SCALE
    try:
        jac = chainrule.SparseJacobian(reordered, X, staged=staged)
        sweeps = _calls_of(jac, reordered, X)  # (staged: 0 calls once staged)
        sweeps = _calls_of(jac, reordered, X)
        ORDER = onp.array(ORDER)
        assert _calls_of(jac, reordered, X) == sweeps
        ORDER_LIST = list(ORDER_LIST)
        assert _calls_of(jac, reordered, X) == sweeps
        SCALE = float(str(SCALE))  # (a new float object equal to the old)
        assert SCALE is not before[2] and _calls_of(jac, reordered, X) == sweeps
        # an array changed in place, then rebound to one equal to its first value: the
        # pattern found for the first value holds
        ORDER[...] = [4, 3, 2, 1, 0]
        ORDER = onp.array([1, 0, 3, 2, 4])
        assert _calls_of(jac, reordered, X + 0.5) == sweeps
        # rebound to a different value: recorded again (and staged again), then not
        ORDER = onp.array([2, 3, 4, 0, 1])
        first, then = _calls_of(jac, reordered, X), _calls_of(jac, reordered, X)
        assert first > then == _calls_of(jac, reordered, X - 0.5)
        ORDER_LIST = [0, 1, 2, 4, 3]
        assert _calls_of(jac, reordered, X) > _calls_of(jac, reordered, X)
        SCALE = -0.0  # (a signed zero is another value: recorded again)
        assert _calls_of(jac, reordered, X) > _calls_of(jac, reordered, X)
    finally:
        ORDER, ORDER_LIST, SCALE = before


def test_an_array_subclass_changed_in_place_is_seen():
    """A memmap, a masked array, an ndarray subclass: fingerprinted as plain arrays are."""
    weights = onp.array([1.0, 0.0, 0.0, 2.0, 0.0])
    for kind in (lambda w: w.view(onp.matrix).reshape(1, -1), lambda w: onp.ma.array(w)):
        held = kind(weights.copy())

        def fun(u, held=held):
            return np.dot(onp.diag(onp.asarray(held).ravel()), u)

        jac = chainrule.SparseJacobian(fun, X)
        _check(jac, fun, X)
        held[...] = onp.array([0.0, 1.0, 3.0, 0.0, 1.0]).reshape(held.shape)
        _check(jac, fun, X)


@pytest.mark.parametrize("staged", [False, True])
def test_a_sparse_matrix_rebound_to_one_of_the_same_coordinates(staged):
    """Its fingerprint is its coordinates (the pattern reads no more), but staged sweeps
    keep the matrix itself: a new one, of other values, is staged again."""
    import scipy.sparse as sp

    band = {"S": sp.diags([onp.ones(4), onp.arange(1.0, 6.0)], [1, 0], format="csr")}

    def fun(u):
        return band["S"] @ u * u

    jac = chainrule.SparseJacobian(fun, X, staged=staged)
    _check(jac, fun, X)
    band["S"] = sp.diags([2 * onp.ones(4), onp.arange(3.0, 8.0)], [1, 0], format="csr")
    _check(jac, fun, X)
    band["S"].data[:] = 7.0  # (in place: read through the matrix itself)
    _check(jac, fun, X)


def test_a_long_list_changed_past_its_64th_item():
    """Every item of a container is watched, not the first 64 (the search vmap and jit
    make stops there)."""
    n = 100
    x = onp.linspace(0.1, 1.0, n)
    order = {"P": list(range(n)), "arrays": [onp.arange(3) for _ in range(70)]}

    calls = collections.deque()

    def fun(u):
        calls.append(1)
        return u[order["P"]] * u + np.sum(u[order["arrays"][-1]]) * u

    jac = chainrule.SparseJacobian(fun, x)
    _check(jac, fun, x)
    order["P"][80], order["P"][90] = 90, 80  # in place, past the 64th item
    _check(jac, fun, x)
    order["arrays"][-1][...] = [7, 8, 9]  # an array held past the 64th item, in place
    _check(jac, fun, x)
    calls.clear()
    jac(x)
    sweeps = len(calls)
    order["P"] = list(order["P"])  # rebound to an equal long list: nothing recorded
    calls.clear()
    jac(x)
    assert len(calls) == sweeps
    _check(jac, fun, x)
    order["P"] = order["P"][::-1]
    _check(jac, fun, x)


def test_a_rebinding_to_an_equal_value_that_changes_an_identity_is_recorded_again():
    """Equal values keep the pattern only where the values read stay one object or two
    as before: the function may decide on ``is``."""
    first = onp.array([1, 0, 2, 3, 4])
    held = {"P": first, "P0": first}

    def fun(u):
        return u[held["P"]] * u if held["P"] is held["P0"] else u[::-1] * u

    jac = chainrule.SparseJacobian(fun, X)
    _check(jac, fun, X)
    held["P"] = first.copy()  # equal, no longer the same object as P0
    _check(jac, fun, X)
    held["P"] = first  # the same object again
    _check(jac, fun, X)


def test_the_sparse_contract_catches_a_pattern_kept_for_values_that_changed(monkeypatch):
    """Test the tester: where every change of the globals counted as a rebinding to equal
    values, the harness's programs find wrong Jacobians."""
    from tests.contracts import contracts
    from tests.contracts._runner import run

    from chainrule._transforms import sparse

    monkeypatch.setattr(sparse._Constants, "equals", lambda self, before: True)
    report = run(contracts()["sparse"], 300, seed=0, max_failures=1)
    assert report.failures, "patterns kept for changed globals went unnoticed for 300 programs"


def test_a_dict_whose_keys_are_renamed_in_place():
    """The same values in the same order under other keys: what ``held["a"]`` finds
    changed (a dict's keys are watched with its values)."""
    held = {"a": onp.array([1, 0, 2, 3, 4]), "b": onp.array([4, 3, 2, 1, 0])}

    def fun(u):
        return u[held["a"]] * u

    jac = chainrule.SparseJacobian(fun, X)
    _check(jac, fun, X)
    a, b = held["a"], held["b"]
    held.clear()
    held["b"], held["a"] = a, b
    _check(jac, fun, X)


class _Model:
    """Holds a permutation read through a property and a method."""

    def __init__(self, perm):
        self._perm = perm

    @property
    def perm(self):
        return self._perm

    def permutation(self):
        return self.perm


@pytest.mark.parametrize("read", ["property", "method"])
def test_an_attribute_read_through_a_property_or_a_method(read):
    model = _Model(onp.array([1, 0, 2, 3, 4]))

    def fun(u):
        perm = model.perm if read == "property" else model.permutation()
        return u[perm] * u

    jac = chainrule.SparseJacobian(fun, X)
    _check(jac, fun, X)
    model._perm = onp.array([4, 3, 2, 1, 0])  # rebound
    _check(jac, fun, X)
    model._perm[...] = [1, 3, 0, 4, 2]  # in place
    _check(jac, fun, X)


SHARED = _Model(onp.array([1, 0, 2, 3, 4]))
SHARED.scale = 2.0


def _helper(u):
    return u[SHARED._perm]


def reads_shared(u):
    return _helper(u) * u * SHARED.scale  # (SHARED reached first for .scale)


def test_an_object_reached_again_for_other_attributes():
    before = SHARED._perm
    try:
        jac = chainrule.SparseJacobian(reads_shared, X)
        _check(jac, reads_shared, X)
        SHARED._perm = onp.array([4, 3, 2, 1, 0])
        _check(jac, reads_shared, X)
    finally:
        SHARED._perm = before


def _nested(value, depth: int):
    for _ in range(depth):
        value = [value]
    return value


def test_a_list_deeper_than_the_search_rebound_to_another_is_recorded_again():
    """Lists rebound to lists count as equal item by item, where the search reached their
    items: past its depth, only as themselves."""
    held = {"P": _nested([1, 0, 2, 3, 4], 14)}

    def innermost(v):
        while type(v[0]) is list:
            v = v[0]
        return v

    def fun(u):
        return u[innermost(held["P"])] * u

    jac = chainrule.SparseJacobian(fun, X)
    _check(jac, fun, X)
    held["P"] = _nested([4, 3, 2, 1, 0], 14)
    _check(jac, fun, X)
