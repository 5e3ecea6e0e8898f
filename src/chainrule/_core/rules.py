"""Registering derivative rules for primitives, in both modes: the functions that fill
the entries of the rule table (``rule_table.PrimitiveRules``).

VJPs. chainrule's own tables give one *direct* rule per argument,
``rule(g, ans, *args, **kwargs)`` (``defvjp_direct``), or one *whole* VJP for all traced
arguments at once (``defvjp_whole``); both run only in the backward pass. autograd's
*staged* forms (``defvjp``: ``maker(ans, *args, **kwargs) -> (g -> cotangent)``, and
``defvjp_argnum``/``defvjp_argnums``) are accepted for compatibility. JVPs: one rule per
argument, ``rule(g, ans, *args, **kwargs)`` giving that argument's tangent contribution
(``defjvp``), or autograd's per-argnum forms; ``defjvp_batched`` adds rules taking a batch
of tangents. A rule given as ``None`` means a zero derivative for that argument.

The forms user code registers with (``defvjp``, ``defjvp``) check each value a rule
returns against the shape and dtype it must have; chainrule's own tables use the
``_direct`` forms, which do not, so the check costs nothing for built-in rules.
"""

from __future__ import annotations

import inspect
import sys
import warnings
from collections.abc import Callable
from itertools import count

from .rule_table import note_registration, rules_of
from .taylor import make_linear_taylor, make_multilinear_taylor
from .tracer import copy_of
from .vspace import add_values, vspace


def _name(fun) -> str:
    return getattr(fun, "__name__", repr(fun))


def _argument_name(fun, argnum: int) -> str:
    raw = getattr(fun, "fun", fun)  # a primitive wraps the raw function
    try:
        params = list(inspect.signature(raw).parameters.values())
    except (TypeError, ValueError):  # ufuncs and builtins may have no signature
        params = []
    named = [p.name for p in params if p.kind == p.POSITIONAL_OR_KEYWORD
             or p.kind == p.POSITIONAL_ONLY]
    return f"'{named[argnum]}'" if argnum < len(named) else str(argnum)


def not_differentiable(fun, argnum: int, mode: str = "VJP") -> NotImplementedError:
    """The error for a traced value in an argument that has no derivative rule: the one
    message every rule table gives, naming the function and the argument."""
    return NotImplementedError(
        f"{mode} of {_name(fun)} with respect to argument {_argument_name(fun, argnum)} "
        f"(position {argnum}) is not defined: that argument is an integer, index, boolean "
        f"or other non-differentiable input. Pass a constant there, or wrap the traced "
        f"value in stop_gradient."
    )


def _missing(fun, argnum: int, mode: str):
    def rule(*args, **kwargs):
        raise not_differentiable(fun, argnum, mode)

    return rule


def _zero_rule(*args, **kwargs):
    return None


def check_rule_value(fun, mode: str, what: str, value, like, like_what: str) -> None:
    """Refuse a value returned by a user's rule that does not fit where it goes: a
    cotangent must have its argument's shape, a tangent its output's, and neither may be
    complex where that is real (a wrong shape would broadcast silently)."""
    if value is None:
        return
    expected = getattr(like, "shape", ())
    got = getattr(value, "shape", ())
    if got != expected:
        raise ValueError(
            f"The {mode} of {_name(fun)} returned a {what} of shape {got} for {like_what}, "
            f"which has shape {expected}. A {mode} must return one value of that shape"
            f"{' (sum over broadcast axes)' if mode == 'VJP' else ''}."
        )
    if _is_complex(value) and not _is_complex(like):
        raise TypeError(
            f"The {mode} of {_name(fun)} returned a complex {what} for {like_what}, which is "
            f"real. A {mode} must return a real value there (take the real part if the "
            f"imaginary part is meant to vanish)."
        )


def _is_complex(x) -> bool:
    dtype = getattr(x, "dtype", None)
    return isinstance(x, complex) if dtype is None else dtype.kind == "c"


def check_cotangent_shape(fun, argnum: int, cotangent, arg) -> None:
    check_rule_value(fun, "VJP", "cotangent", cotangent, arg, f"argument {argnum}")


# ----------------------------------------------------------------------------- replacing rules


class RuleReplacedWarning(UserWarning):
    """``defvjp`` replaced the VJP of a primitive whose JVP (forward mode) stays the old one."""


def _set_vjp(fun: Callable, vjp: Callable, by_argnums: dict | None = None) -> None:
    """Set ``fun``'s VJP; ``by_argnums`` is the cache of its per-argument rules (see
    ``PrimitiveRules``). Warns when only the VJP of a pair is replaced."""
    entry = rules_of(fun)
    if entry.vjp is not None and entry.jvp is not None and not entry.jvp_replaced:
        warnings.warn(RuleReplacedWarning(
            f"defvjp replaces the VJP of {_name(fun)}, which already had one, but forward "
            f"mode (jvp, jacfwd, make_jvp and what is built on them) still uses its old JVP, "
            f"so the two modes now disagree. To replace both, call "
            f"defjvp({_name(fun)}, ...) first and defvjp({_name(fun)}, ...) after it (no "
            f"warning then), or define a new primitive that wraps the function."
        ), stacklevel=_caller_level())
    entry.jvp_replaced = False
    entry.vjp = vjp
    note_registration(fun, "vjp")
    entry.vjp_by_argnums = {} if by_argnums is None else by_argnums
    # a new VJP reads everything until it says otherwise (defvjp_direct's ``reads``), and
    # its rules are not each other's swapped until defsymmetric says so again (a user's
    # defvjp of multiply: x * x would hand the first rule's cotangent to both)
    entry.declare_reads(None)
    entry.symmetric = False


def _set_jvp(fun: Callable, jvp: Callable) -> None:
    entry = rules_of(fun)
    entry.jvp_replaced = entry.jvp is not None
    entry.jvp = jvp
    note_registration(fun, "jvp")


def _caller_level() -> int:
    """The stacklevel of the first caller outside this module (for warnings)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename == __file__:
        frame, level = frame.f_back, level + 1
    return level


# ----------------------------------------------------------------------------- reverse mode


def defvjp_direct(fun: Callable, *rules, argnums=None,
                  reads: tuple | dict | None = None) -> None:
    """Define ``fun``'s VJP per argument with direct rules ``rule(g, ans, *args, **kw)``.

    ``reads`` declares what the rules read: the positions of the arguments whose values
    they use and ``"ans"`` if they use the answer, e.g. ``reads=("ans",)`` for exp. Of the
    other arguments (among the first four) the tape keeps only shape and dtype
    (``ShapeOnly``, which refuses to be computed with), and the rules get None for an
    unread answer. ``None``, the default, keeps everything: always right, never lean.
    A dict declares the reads of each argument's rule, ``reads={0: (1,), 1: (0,)}`` for
    multiply: a call keeps what the rules of its traced arguments read (with only ``y``
    traced, ``x * y`` keeps ``x`` and neither ``y`` nor the answer).
    """
    table = {
        argnum: _zero_rule if rule is None else rule
        for argnum, rule in zip(count() if argnums is None else argnums, rules)
    }

    chosen: dict[tuple, tuple] = {}  # argnums -> their rules, looked up once per argnums
    entry = rules_of(fun)

    def vjp(g, argnums, ans, args, kwargs):
        rules = chosen.get(argnums)
        if rules is None:
            rules = chosen[argnums] = tuple(
                table.get(i) or _missing(fun, i, "VJP") for i in argnums
            )
        if len(rules) == 1:
            return (rules[0](g, ans, *args, **kwargs),)
        if len(args) == 2 and args[0] is args[1] and entry.symmetric:
            grad = rules[0](g, ans, *args, **kwargs)  # (x * x: see defsymmetric)
            return (grad, grad)
        return tuple([rule(g, ans, *args, **kwargs) for rule in rules])

    _set_vjp(fun, vjp, by_argnums=chosen)
    rules_of(fun).declare_reads(reads)


def defvjp(fun: Callable, *vjpmakers, argnums=None) -> None:
    """autograd's form: ``vjpmaker(ans, *args, **kwargs)`` returns ``g -> cotangent``.

    This is the form user code registers with, so each cotangent is checked against
    its argument (``check_rule_value``): a wrong shape would otherwise broadcast silently.
    """

    def direct(argnum, maker):
        if maker is None:
            return None

        def rule(g, ans, *args, **kwargs):
            cotangent = maker(ans, *args, **kwargs)(g)
            check_cotangent_shape(fun, argnum, cotangent, args[argnum])
            return cotangent

        return rule

    argnums = list(range(len(vjpmakers))) if argnums is None else list(argnums)
    defvjp_direct(fun, *map(direct, argnums, vjpmakers), argnums=argnums)


def defvjp_whole(fun: Callable, vjp: Callable, reads: tuple | None = None) -> None:
    """Define ``fun``'s VJP as one function ``vjp(g, argnums, ans, args, kwargs)`` giving a
    tuple with one cotangent per traced argument (None for zero): for rules that share
    work between arguments (einsum) or take a variable number of them (concatenate).
    ``reads``: see ``defvjp_direct``."""
    _set_vjp(fun, vjp)
    rules_of(fun).declare_reads(reads)


def defvjp_argnum(fun: Callable, vjpmaker: Callable) -> None:
    """``vjpmaker(argnum, ans, args, kwargs)`` returns ``g -> cotangent``."""

    def vjp(g, argnums, ans, args, kwargs):
        return tuple(vjpmaker(i, ans, args, kwargs)(g) for i in argnums)

    _set_vjp(fun, vjp)


def defvjp_argnums(fun: Callable, vjpmaker: Callable) -> None:
    """``vjpmaker(argnums, ans, args, kwargs)`` returns ``g -> tuple of cotangents``."""

    def vjp(g, argnums, ans, args, kwargs):
        return tuple(vjpmaker(argnums, ans, args, kwargs)(g))

    _set_vjp(fun, vjp)


def deflabel(fun: Callable, label, operator: bool = False) -> None:
    """How ``explain`` writes a call of ``fun``: a format string over the texts of its
    arguments (``"{0} + {1}"``), or ``label(texts, args) -> str``. Without one a call is
    written ``name(a, b)``. ``operator=True``: the label is Python's operator, which on
    NumPy scalars gives ``fun``'s bits, result type and warnings (``+ - * /`` and unary
    ``-`` of float64 and complex128 scalars), so ``chainrule.jit`` writes scalar calls so."""
    if operator and not isinstance(label, str):
        raise TypeError(f"deflabel({_name(fun)}, ..., operator=True) needs a format string "
                        f"such as \"{{0}} + {{1}}\", not {label!r}.")
    entry = rules_of(fun)
    entry.label, entry.operator = label, operator
    note_registration(fun, "label")
    if operator:
        note_registration(fun, "operator")


# ----------------------------------------------------------------------------- forward mode


def _sum_contributions(contributions, ans):
    total = None
    for c in contributions:
        if c is not None:
            total = c if total is None else add_values(total, c)
    return vspace(ans).zeros() if total is None else total


def defjvp(fun: Callable, *rules, argnums=None) -> None:
    """Define ``fun``'s JVP per argument with rules ``rule(g, ans, *args, **kw)``.

    This is the form user code registers with, so each tangent is checked against the
    output (``check_rule_value``): a wrong shape would otherwise broadcast silently.
    """

    def checked(rule):
        if rule is None:
            return None

        def checked_rule(g, ans, *args, **kwargs):
            tangent = rule(g, ans, *args, **kwargs)
            check_rule_value(fun, "JVP", "tangent", tangent, ans, "the output")
            return tangent

        return checked_rule

    defjvp_direct(fun, *map(checked, rules), argnums=argnums)


def defjvp_direct(fun: Callable, *rules, argnums=None) -> None:
    """``defjvp`` without the check of the tangents (for chainrule's own rule tables)."""
    table = {
        argnum: _zero_rule if rule is None else rule
        for argnum, rule in zip(count() if argnums is None else argnums, rules)
    }

    def jvp(tangents, argnums, ans, args, kwargs):
        if len(argnums) == 1:
            argnum = argnums[0]
            rule = table.get(argnum) or _missing(fun, argnum, "JVP")
            out = rule(tangents[0], ans, *args, **kwargs)
            return vspace(ans).zeros() if out is None else out
        return _sum_contributions(
            (
                (table.get(i) or _missing(fun, i, "JVP"))(t, ans, *args, **kwargs)
                for t, i in zip(tangents, argnums)
            ),
            ans,
        )

    _set_jvp(fun, jvp)


def defjvp_batched(fun: Callable, *rules, argnums=None) -> None:
    """Batched JVP rules ``rule(g, ans, *args, **kw)`` per argument, where ``g`` and the
    contribution have a leading batch axis. Calls with an argument that has no rule are
    left to the unbatched rules (the caller loops)."""
    table = dict(zip(count() if argnums is None else argnums, rules))

    def jvp(tangents, argnums, ans, args, kwargs):
        total = None
        for t, i in zip(tangents, argnums):
            rule = table.get(i)
            if rule is None:
                return None
            c = rule(t, ans, *args, **kwargs)
            if c is None:
                return None
            total = c if total is None else add_values(total, c)
        return total

    rules_of(fun).batched_jvp = jvp
    note_registration(fun, "batched_jvp")


def defjvp_argnum(fun: Callable, jvpmaker: Callable) -> None:
    """``jvpmaker(argnum, g, ans, args, kwargs)`` gives one argument's tangent contribution."""

    def jvp(tangents, argnums, ans, args, kwargs):
        return _sum_contributions(
            (jvpmaker(i, t, ans, args, kwargs) for t, i in zip(tangents, argnums)), ans
        )

    _set_jvp(fun, jvp)


def defjvp_argnums(fun: Callable, jvpmaker: Callable) -> None:
    """``jvpmaker(argnums, gs, ans, args, kwargs)`` gives the whole tangent."""

    def jvp(tangents, argnums, ans, args, kwargs):
        return jvpmaker(argnums, tangents, ans, args, kwargs)

    _set_jvp(fun, jvp)


def def_linear(fun: Callable) -> None:
    """Declare ``fun`` linear in each argument: its JVP is ``fun`` applied to the tangent."""

    def jvp(argnum, g, ans, args, kwargs):
        args = list(args)
        args[argnum] = g
        return fun(*args, **kwargs)

    defjvp_argnum(fun, jvp)
    # linear in each argument: a product of the traced ones, whose series is a Cauchy product
    deftaylor(fun, make_multilinear_taylor(fun))


def defsparsity(fun: Callable, rule: Callable) -> None:
    """How ``fun``'s outputs depend on its inputs, for sparsity detection:
    ``rule(argnum, ans, args, kwargs)`` gives the pattern of d ans / d args[argnum] as a
    boolean ``scipy.sparse`` matrix of shape (ans.size, args[argnum].size), or None for
    unknown (dense). ``args`` are plain values; ``argnum`` is traced."""
    rules_of(fun).sparsity = rule
    note_registration(fun, "sparsity")


def defbatch(fun: Callable, rule: Callable) -> None:
    """How ``fun`` runs on a whole batch at once under ``chainrule.vmap``:
    ``rule(values, batched, kwargs)`` is the answer, ``values`` being the positional
    arguments, those whose ``batched`` flag is set holding the batch as their leading axis;
    every output holds it as its leading axis. Without one, ``fun`` runs once per example."""
    rules_of(fun).batch = rule
    note_registration(fun, "batch")


def deftaylor(fun: Callable, rule: Callable) -> None:
    """``fun``'s Taylor rule ``rule(series_in, argnums, ans, args, kwargs, order) ->
    series_out`` (see ``chainrule._core.taylor``): ``series_in`` holds, per traced argument,
    its ``order`` normalized Taylor coefficients x_j = x^(j)(0) / j!; the rule answers the
    output's. Without one, Taylor mode nests ``fun``'s JVP (exact, O(2^order))."""
    rules_of(fun).taylor = rule
    note_registration(fun, "taylor")


def deflayout_by_value(fun: Callable) -> None:
    """Declare that the layout (type, dtype, shape) of ``fun``'s answer depends on its
    arguments' values (``real_if_close`` is real where the imaginary parts are small):
    ``chainrule.jit`` guards the layout of each call's answer, so a call whose answer takes
    another layout runs the function again instead of the program traced for the first.
    Without it, jit takes the layout as fixed by the arguments' types and shapes: code
    after the call that reads it (``y.shape[0]``, a dtype test) runs as it was traced."""
    rules_of(fun).layout_by_value = True
    note_registration(fun, "layout_by_value")


def defnew_array(fun: Callable) -> None:
    """Declare that ``fun``'s array answers are always new arrays, never views of an
    argument (``sum``, ``matmul``; unlike ``reshape`` or indexing). ``chainrule.jit`` then
    need not keep a returned answer's arguments apart from the caller's values. Without
    it jit assumes an answer may be a view, which is always right."""
    rules_of(fun).new_array = True
    note_registration(fun, "new_array")


def defsymmetric(fun: Callable) -> None:
    """Declare ``fun``'s two arguments interchangeable (``fun(x, y)`` is ``fun(y, x)``, and
    its VJP rules are each other's with the arguments swapped: ``add``, ``multiply``), so
    that with one value as both (``x * x``) the backward pass computes their cotangent
    once and hands it to both."""
    rules_of(fun).symmetric = True
    note_registration(fun, "symmetric")


_NEUTRAL_KINDS = ("ones", "eye")


def defneutral(fun: Callable, kind: str) -> None:
    """Declare the constant under which a call of ``fun`` (two arguments, one constant)
    answers its other argument, so that ``chainrule.jit`` may drop the call: ``"ones"``
    (an elementwise product: ``x * 1`` is ``x`` bit for bit, in the same layout) or
    ``"eye"`` (a matrix product: ``I @ m`` is ``m`` where m's entries are finite and
    nonzero; jit checks that at run time and copies)."""
    if kind not in _NEUTRAL_KINDS:
        raise ValueError(f"defneutral({_name(fun)}, {kind!r}): the kind is one of "
                         f"{', '.join(map(repr, _NEUTRAL_KINDS))}.")
    rules_of(fun).neutral = kind
    note_registration(fun, "neutral")


def deflowered_by_value(fun: Callable) -> None:
    """Declare that ``chainrule.jit``'s code for a call of ``fun`` reads the values of its
    constant arguments, not only their types (``moveaxis`` is written as the ``transpose``
    of the permutation its axes make): jit then writes each such call for its values."""
    rules_of(fun).lowered_by_value = True
    note_registration(fun, "lowered_by_value")


def deffinite_from_inf(fun: Callable, *argnums: int) -> None:
    """Declare the argument positions of ``fun`` where an infinite value may give a finite
    answer (``x / inf`` is 0: position 1 of ``divide``; ``exp(-inf)`` is 0). Python's
    floats do not warn on overflow where NumPy's do, so ``chainrule.jit``'s float programs
    check that such values are finite, and otherwise answer with NumPy's warnings."""
    rules_of(fun).finite_from_inf = tuple(sorted(argnums))
    note_registration(fun, "finite_from_inf")


def defreduction(fun: Callable, ufunc) -> None:
    """Declare that a call of ``fun`` on an ndarray is ``ufunc.reduce`` with the same
    arguments (``numpy.sum`` is ``numpy.add.reduce`` behind NumPy's Python layer, which
    its parameters after the array name): ``chainrule.jit`` calls the reduce directly."""
    rules_of(fun).reduction = ufunc
    note_registration(fun, "reduction")


def deflowering(fun: Callable, lowering: Callable) -> None:
    """How ``chainrule.jit`` writes a call of ``fun`` whose first argument is an array:
    ``lowering(vals, texts, kwtexts)`` answers a Python expression over the arguments'
    code (``texts``, and ``kwtexts`` by keyword) that gives the call's bits, result type
    and views for these values (``vals``: the arguments at trace time, arrays as their
    shape and dtype), or None to write the call of ``fun`` itself."""
    rules_of(fun).lowering = lowering
    note_registration(fun, "lowering")


_SILENT_WHEN = ("always", "fixed index", "one number")


def defsilent(fun: Callable, when: str = "always") -> None:
    """Declare that a call of ``fun`` can neither raise nor warn on arguments of the types
    and shapes it was traced with, so ``chainrule.jit`` may leave it out where nothing
    reads its answer: ``"always"``, ``"fixed index"`` (while only its first argument is
    traced) or ``"one number"`` (while only its first argument is traced and holds one
    number). Without it jit keeps every call, for its errors and warnings."""
    if when not in _SILENT_WHEN:
        raise ValueError(f"defsilent({_name(fun)}, {when!r}): the condition is one of "
                         f"{', '.join(map(repr, _SILENT_WHEN))}.")
    rules_of(fun).silent = when
    note_registration(fun, "silent")


def deftakes_masks(fun: Callable, n_args: int | None = None) -> None:
    """Declare that the shape of ``fun``'s answer never depends on the values of a boolean
    array argument (elementwise use: ``where(c, x, y)``, ``astype``, ``sum``), so
    ``chainrule.jit`` stages a mask through the call instead of specialising the program
    on its value; ``n_args``: only for calls with that many arguments."""
    rules_of(fun).takes_masks = True if n_args is None else n_args
    note_registration(fun, "takes_masks")


def deftakes_index_arrays(fun: Callable) -> None:
    """Declare that an integer array argument of ``fun``, used as an index, gives an
    answer of the index's shape (``x[i]``, ``take``): ``chainrule.jit`` stages such an
    index through the call instead of specialising the program on its value."""
    rules_of(fun).takes_index_arrays = True
    note_registration(fun, "takes_index_arrays")


def deftaylor_linear(fun: Callable) -> None:
    """Declare ``fun`` linear (or affine) in its traced arguments together for Taylor mode:
    each output coefficient is the JVP of the same input coefficients."""
    deftaylor(fun, make_linear_taylor(fun))


# copy.copy / copy.deepcopy of a traced value (tracer.Box): the identity, in both modes.
defvjp_direct(copy_of, lambda g, ans, x: g, reads=())
defjvp_direct(copy_of, lambda g, ans, x: g)
defbatch(copy_of, lambda values, batched, kwargs: copy_of(values[0]))
deftaylor_linear(copy_of)
