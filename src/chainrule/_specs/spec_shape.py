"""Specs for shape, construction, selection and joining functions."""

import numpy as onp

import chainrule.numpy as np

from . import Case, make

F32 = onp.float32
C = onp.complex128


def one(name, fun, ref, shape, *args, dtype=onp.float64, **kwargs):
    """A case differentiating ``fun(x, *args, **kwargs)`` w.r.t. x of ``shape``."""
    return Case(name, fun, (make(shape, dtype),) + args, kwargs, ref=ref)


def lam(name, fun, ref, *arrays, argnums=None, label=""):
    """A case for a lambda over arrays (for list-taking functions and keyword forms)."""
    argnums = tuple(range(len(arrays))) if argnums is None else argnums
    return Case(name, fun, tuple(arrays), argnums=argnums, ref=ref, label=label)


# Second order through traced lists needs vspace.add_values to add SequenceBox
# cotangents element by element (today ``+`` concatenates them): reported to the lead.
LIST_ORDER = 2


def joined(name, fun, *arrays, label=""):
    """Cases for ``fun(module, *arrays)`` returning a sequence of arrays: the primal
    compared with NumPy's after joining, and derivatives checked on the sequence itself."""

    def join(m, *a):
        return m.concatenate([m.ravel(p) for p in fun(m, *a)])

    argnums = tuple(range(len(arrays)))
    return [Case(name, lambda *a: join(np, *a), arrays, argnums=argnums,
                 ref=lambda *a: join(onp, *a), label=label + "-joined", order=LIST_ORDER),
            Case(name, lambda *a: tuple(fun(np, *a)), arrays, argnums=argnums, label=label,
                 order=LIST_ORDER)]


def same(name, *variants, **common):
    """``one`` over (shape, *args) variants, for a function with the same name in both."""
    fun, ref = getattr(np, name), getattr(onp, name)
    return [one(name, fun, ref, v[0], *v[1:], **common) for v in variants]


A23, A234 = make((2, 3)), make((2, 3, 4))
B3 = make((3,), seed=4)
SORTED_XP = onp.array([-1.0, 0.0, 0.5, 2.0])

CASES = [
    # reshaping and axes
    *same("reshape", ((2, 3), (3, 2)), ((2, 3), (-1,)), ((2, 3), (6, 1)), ((), (1, 1))),
    one("reshape", np.reshape, onp.reshape, (2, 3), (3, 2), order="F"),
    *same("ravel", ((2, 3),), ((),)),
    one("ravel", np.ravel, onp.ravel, (2, 3), order="F"),
    *same("squeeze", ((1, 3, 1),), ((1, 3, 1), 0)),
    *same("expand_dims", ((2, 3), 1), ((3,), (0, 2))),
    *same("transpose", ((2, 3, 4),), ((2, 3, 4), (1, 2, 0))),
    *same("permute_dims", ((2, 3, 4), (2, 0, 1))),
    *same("swapaxes", ((2, 3, 4), 0, 2)),
    *same("moveaxis", ((2, 3, 4), 0, -1), ((2, 3, 4), [0, 1], [2, 0])),
    *same("rollaxis", ((2, 3, 4), 2), ((2, 3, 4), 2, 1)),
    *same("broadcast_to", ((3,), (2, 3)), ((), (2,)), ((2, 1), (2, 3))),
    one("broadcast_to", np.broadcast_to, onp.broadcast_to, (2, 1), (2, 3), dtype=F32),
    *same("atleast_1d", ((),), ((2,),)),
    *same("atleast_2d", ((),), ((3,),)),
    *same("atleast_3d", ((),), ((3,),), ((2, 3),)),
    *joined("atleast_2d", lambda m, a, b: m.atleast_2d(a, b), make((3,)), 1.5, label="two"),
    # copies and rearrangements
    *same("repeat", ((3,), 2), ((2, 3), [1, 2], 0), ((2, 3), 2, 1)),
    *same("tile", ((3,), 2), ((2, 3), (2, 1))),
    *same("roll", ((5,), 2), ((2, 3), 1, 1), ((2, 3), (1, 1), (0, 1))),
    *same("rot90", ((2, 3),), ((2, 3), 3), ((2, 3, 2), 1, (1, 2))),
    *same("flip", ((2, 3),), ((2, 3), 1)),
    *same("fliplr", ((2, 3),)),
    *same("flipud", ((2, 3),)),
    *same("diag", ((3,),), ((3,), 1), ((3, 3),), ((2, 3), -1)),
    *same("diagonal", ((3, 3),), ((2, 3, 3), 1, 1, 2)),
    *same("diagflat", ((2, 2),), ((3,), -1)),
    *same("tril", ((3, 3),), ((2, 3, 4), 1)),
    *same("triu", ((3, 3),), ((2, 3, 4), -1)),
    *same("pad", ((3,), 2), ((2, 3), ((1, 0), (2, 1))), ((4,), 2, "reflect"),
          ((2, 3), 1, "edge"), ((4,), 3, "wrap"), ((3,), (1, 2), "symmetric")),
    one("pad", np.pad, onp.pad, (2, 3), 1, constant_values=4.0),
    one("copy", np.copy, onp.copy, (2, 3)),
    one("asarray", np.asarray, onp.asarray, (2, 3)),
    one("asarray", np.asarray, onp.asarray, (2, 3), dtype=F32),
    one("asanyarray", np.asanyarray, onp.asanyarray, (2, 3)),
    one("ascontiguousarray", np.ascontiguousarray, onp.ascontiguousarray, (2, 3)),
    one("asfortranarray", np.asfortranarray, onp.asfortranarray, (2, 3)),
    # selection by index or condition
    *same("take", ((5,), [0, 3, 3]), ((2, 3), [[0, 2]], 1), ((2, 3), 4)),
    one("take", np.take, onp.take, (4,), [1, 5], mode="wrap"),
    *same("take_along_axis", ((2, 3), onp.array([[0, 0], [2, 1]]), 1),
          ((3,), onp.array([2, 2, 0]), 0)),
    lam("compress", lambda x: np.compress([True, False, True], x, axis=1),
        lambda x: onp.compress([True, False, True], x, axis=1), A23),
    lam("extract", lambda x: np.extract(onp.asarray(A23) > 0, x),
        lambda x: onp.extract(onp.asarray(A23) > 0, x), A23),
    *same("delete", ((5,), [0, 2]), ((2, 3), 1, 1)),
    lam("insert", lambda x, v: np.insert(x, 1, v), lambda x, v: onp.insert(x, 1, v),
        make((4,)), 0.5),
    lam("insert", lambda x, v: np.insert(x, [1, 3], v, 1), lambda x, v: onp.insert(x, [1, 3], v, 1),
        A23, make((2,), seed=3), label="axis"),
    lam("append", np.append, onp.append, A23, B3),
    lam("append", lambda x, v: np.append(x, v, axis=0), lambda x, v: onp.append(x, v, axis=0),
        A23, make((1, 3)), label="axis"),
    lam("select", lambda a, b: np.select([A23 > 0.5, A23 < -0.5], [a, b], 0.25),
        lambda a, b: onp.select([A23 > 0.5, A23 < -0.5], [a, b], 0.25), A23, B3),
    lam("select", lambda a, d: np.select([A23 > 0], [a], d),
        lambda a, d: onp.select([A23 > 0], [a], d), B3, 1.5, label="default"),
    # sorting (derivative follows the elements; distinct values here)
    *same("sort", ((5,),), ((2, 3), 0), ((2, 3), None)),
    *same("partition", ((5,), 2), ((2, 4), 1, 1)),
    # differences, integrals, interpolation
    *same("diff", ((5,),), ((5,), 2), ((2, 4), 1, 0), ((2, 4), 3, -1)),
    one("diff", np.diff, onp.diff, (4,), prepend=1.0, append=[2.0, 3.0]),
    *same("ediff1d", ((5,),), ((2, 3),)),
    one("ediff1d", np.ediff1d, onp.ediff1d, (4,), to_end=[1.0, 2.0], to_begin=-1.0),
    *same("gradient", ((5,),), ((5,), 0.5)),
    one("gradient", np.gradient, onp.gradient, (5,), edge_order=2),
    one("gradient", np.gradient, onp.gradient, (3, 4), axis=1),
    lam("gradient", np.gradient, onp.gradient, make((5,)), 0.7, label="spacing"),
    lam("interp", lambda x, fp: np.interp(x, SORTED_XP, fp),
        lambda x, fp: onp.interp(x, SORTED_XP, fp),
        onp.array([-1.5, -0.3, 0.2, 1.1, 2.5]), make((4,))),
    lam("interp", lambda x: np.interp(x, SORTED_XP, SORTED_XP ** 2, left=-1.0, right=7.0),
        lambda x: onp.interp(x, SORTED_XP, SORTED_XP ** 2, left=-1.0, right=7.0),
        onp.array([-1.5, 0.7, 1.1, 2.5]), label="left-right"),
    *same("trapezoid", ((5,),), ((2, 4),), ((2, 4), None, 0.5, 0)),
    lam("trapezoid", np.trapezoid, onp.trapezoid, make((4,)), onp.array([0.0, 0.5, 1.5, 1.7])),
    lam("trapezoid", lambda y, x: np.trapezoid(y, x, axis=0),
        lambda y, x: onp.trapezoid(y, x, axis=0), make((4, 2)), onp.array([0.0, 0.5, 1.5, 1.7]),
        label="axis0"),
    *[lam("convolve", lambda a, v, m=m: np.convolve(a, v, m),
          lambda a, v, m=m: onp.convolve(a, v, m), make((5,)), make((3,), seed=2), label=m)
      for m in ("full", "same", "valid")],
    lam("convolve", np.convolve, onp.convolve, make((2,)), make((4,), seed=2), label="short"),
    *[lam("correlate", lambda a, v, m=m: np.correlate(a, v, m),
          lambda a, v, m=m: onp.correlate(a, v, m), make((5,)), make((3,), seed=2), label=m)
      for m in ("full", "same", "valid")],
    lam("correlate", np.correlate, onp.correlate, make((3,), onp.complex128),
        make((2,), onp.complex128, seed=2), label="complex"),
    lam("polyval", np.polyval, onp.polyval, make((3,)), make((4,), seed=2)),
    lam("polyval", np.polyval, onp.polyval, make((4,)), 0.7, label="scalar"),
    # constructors
    lam("full", lambda v: np.full((2, 3), v), lambda v: onp.full((2, 3), v), 1.5),
    lam("full", lambda v: np.full((2, 3), v), lambda v: onp.full((2, 3), v), B3, label="row"),
    lam("linspace", lambda a, b: np.linspace(a, b, 5), lambda a, b: onp.linspace(a, b, 5),
        -1.0, 2.0),
    lam("linspace", lambda a, b: np.linspace(a, b, 4, endpoint=False, axis=1),
        lambda a, b: onp.linspace(a, b, 4, endpoint=False, axis=1), make((2,)), 2.0,
        label="axis"),
    lam("array", lambda a, b: np.array([[a, b], [b, a]]),
        lambda a, b: onp.array([[a, b], [b, a]]), 1.5, -0.5),
    lam("array", lambda a, b: np.array([a, b, onp.ones(3)]),
        lambda a, b: onp.array([a, b, onp.ones(3)]), B3, make((3,), seed=5), label="rows"),
    lam("array", lambda a: np.array([a, 2.0 * a], dtype=F32),
        lambda a: onp.array([a, 2.0 * a], dtype=F32), make((3,), F32), label="dtype"),
    # joining
    lam("concatenate", lambda a, b: np.concatenate([a, b]), lambda a, b: onp.concatenate([a, b]),
        A23, make((1, 3))),
    lam("concatenate", lambda a, b: np.concatenate((a, b), axis=1),
        lambda a, b: onp.concatenate((a, b), axis=1), A23, make((2, 2)), label="axis1"),
    lam("stack", lambda a, b: np.stack([a, b], axis=-1), lambda a, b: onp.stack([a, b], axis=-1),
        A23, make((2, 3), seed=9)),
    lam("vstack", lambda a, b: np.vstack([a, b]), lambda a, b: onp.vstack([a, b]), B3, A23),
    lam("row_stack", lambda a, b: np.row_stack([a, b]), lambda a, b: onp.vstack([a, b]), B3, A23),
    lam("hstack", lambda a, b: np.hstack([a, b]), lambda a, b: onp.hstack([a, b]), B3, 1.0),
    lam("hstack", lambda a, b: np.hstack([a, b]), lambda a, b: onp.hstack([a, b]), A23,
        make((2, 1)), label="2d"),
    lam("dstack", lambda a, b: np.dstack([a, b]), lambda a, b: onp.dstack([a, b]), A23, A23),
    lam("column_stack", lambda a, b: np.column_stack([a, b]),
        lambda a, b: onp.column_stack([a, b]), make((2,)), A23),
    lam("block", lambda a, b: np.block([[a, b], [b, a]]),
        lambda a, b: onp.block([[a, b], [b, a]]), make((2, 2)), make((2, 2), seed=3)),
    lam("block", lambda a, b: np.block([a, b, 1.0]), lambda a, b: onp.block([a, b, 1.0]),
        B3, 2.0, label="1d"),
    # complex, single precision and empty arrays
    *same("flip", ((2, 3),), dtype=C),
    *same("roll", ((5,), 2), dtype=C),
    *same("pad", ((3,), 1, "reflect"), dtype=C),
    *same("take", ((5,), [0, 3, 3]), dtype=C),
    *same("sort", ((4,),), dtype=C),
    *same("diff", ((5,),), dtype=C),
    *same("tril", ((3, 3),), dtype=F32),
    *same("tile", ((3,), 2), dtype=F32),
    *same("diag", ((3,),), dtype=F32),
    *same("transpose", ((0, 3),), ((2, 0),)),
    *same("flip", ((0,),)),
    lam("concatenate", lambda a, b: np.concatenate([a, b]), lambda a, b: onp.concatenate([a, b]),
        make((2,), C), make((0,), C), label="complex-empty"),
    lam("stack", lambda a, b: np.stack([a, b]), lambda a, b: onp.stack([a, b]),
        make((3,), F32), make((3,), F32, seed=3), label="f32"),
    # functions returning tuples/lists of arrays: compared joined, and differentiated as lists
    *joined("split", lambda m, x: m.split(x, 3), make((6,))),
    *joined("split", lambda m, x: m.split(x, [1, 2], axis=1), A23, label="indices"),
    *joined("array_split", lambda m, x: m.array_split(x, 3), make((5,))),
    *joined("hsplit", lambda m, x: m.hsplit(x, 3), A23),
    *joined("vsplit", lambda m, x: m.vsplit(x, 2), A23),
    *joined("dsplit", lambda m, x: m.dsplit(x, 2), A234),
    *joined("gradient", lambda m, x: m.gradient(x), make((3, 4))),
    *joined("gradient", lambda m, x: m.gradient(x, 1.0, 2.0), make((4, 4)), label="spacings"),
    *joined("meshgrid", lambda m, a, b: m.meshgrid(a, b), make((3,)), make((2,), seed=3)),
    *joined("meshgrid", lambda m, a, b, c: m.meshgrid(a, b, c, indexing="ij", sparse=True),
            make((3,)), make((2,), seed=3), make((2,), seed=4), label="ij-sparse"),
    Case("split", lambda x: np.split(x, 2)[1] * np.split(x, 2)[0], (make((4,)),),
         label="used", order=LIST_ORDER),
]
