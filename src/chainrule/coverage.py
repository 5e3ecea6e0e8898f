"""Which functions chainrule differentiates, read from the code: ``python -m chainrule.coverage``.

For every differentiable function of chainrule.numpy, .numpy.linalg, .numpy.fft and
(when SciPy is installed) the chainrule.scipy modules, the table says whether a VJP,
a JVP and a batching rule (``vmap``) are registered and to which order the spec tables
test it. A function
is differentiable when it is a traced primitive, or a chainrule wrapper (such as
``concatenate``) whose code calls traced primitives; it has a rule when every
primitive it reaches has one. Python functions whose primitives cannot be read from
their code (closures built at import, as scipy.stats' methods) are listed as
*composite*, with ``?`` for their rules: they are as differentiable as the
primitives they call, which their spec cases check. Tested orders come from the ``Case`` entries
(``name``, ``order``, ``modes``) of the spec modules in ``chainrule/_specs``, which
ship with the package (the rule tests in ``tests/`` expand them into test cases).

Below the table, the Tier 1 and Tier 2 lists of functions chainrule must cover are
checked name by name, and every gap is listed with its reason.

    python -m chainrule.coverage              # plain text
    python -m chainrule.coverage --markdown   # Markdown, for docs and issues
    python -m chainrule.coverage --specs DIR  # read spec tables from DIR
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import pkgutil
import sys
import types
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ._core.rule_table import primitive_jvps, primitive_vjps, rule_table
from ._core.tracer import notrace_primitive, primitive

# Every traced primitive is the same closure code; notrace ones have another.
# (a view primitive, ``answers_view=True``, is its own wrapper around the recording one)
_TRACED_CODES = frozenset([primitive(lambda: None).__code__,
                           primitive(lambda: None, answers_view=True).__code__])
_NOTRACE_CODE = notrace_primitive(lambda: None).__code__

NAMESPACES = [
    ("numpy", "chainrule.numpy"),
    ("numpy.linalg", "chainrule.numpy.linalg"),
    ("numpy.fft", "chainrule.numpy.fft"),
    ("scipy.special", "chainrule.scipy.special"),
    ("scipy.stats", "chainrule.scipy.stats"),
    ("scipy.linalg", "chainrule.scipy.linalg"),
    ("scipy.signal", "chainrule.scipy.signal"),
    ("scipy.integrate", "chainrule.scipy.integrate"),
]

DEFAULT_SPECS = Path(__file__).resolve().parent / "_specs"

# ----------------------------------------------------------------------------- tier lists
# From the project's coverage reference (not shipped with the package). Each entry is
# namespace -> names; NO_GRADIENT names must accept traced values and return the primal
# (zero/no gradient), CONSTANT names only have to exist, OPTIONAL ones may be documented
# gaps. "astype" and "indexing" are ArrayBox methods.
# fmt: off
TIER1 = {
    "numpy": """
        abs absolute add subtract multiply divide true_divide negative reciprocal power pow
        square sqrt exp exp2 expm1 log log2 log10 log1p logaddexp logaddexp2 sin cos tan
        arcsin arccos arctan arctan2 asin acos atan atan2 sinh cosh tanh arcsinh arccosh
        arctanh asinh acosh atanh sinc hypot deg2rad rad2deg degrees radians fabs maximum
        minimum fmax fmin mod remainder clip where nan_to_num real imag conj conjugate angle
        real_if_close
        sum prod mean var std max min amax amin cumsum trace
        dot matmul inner outer tensordot einsum kron cross
        array reshape ravel squeeze expand_dims transpose permute_dims swapaxes moveaxis
        rollaxis broadcast_to atleast_1d atleast_2d atleast_3d concatenate stack vstack hstack
        dstack column_stack split array_split hsplit vsplit dsplit repeat tile roll rot90
        fliplr flipud diag diagonal tril triu pad full linspace sort partition diff gradient
        astype indexing
    """,
    "numpy.linalg": "det slogdet inv pinv solve cholesky eigh eig svd norm",
    "numpy.fft": """fft ifft fft2 ifft2 fftn ifftn rfft irfft rfft2 irfft2 rfftn irfftn
                    fftshift ifftshift""",
    "scipy.special": """
        beta betaln betainc gamma gammaln gammasgn rgamma digamma psi polygamma multigammaln
        gammainc gammaincc erf erfc erfinv erfcinv expit logit logsumexp i0 i1 iv ive j0 j1
        jn y0 y1 yn
    """,
    "scipy.stats": """
        norm.pdf norm.cdf norm.logpdf norm.logcdf norm.sf norm.logsf t.pdf t.cdf t.logpdf
        t.logcdf multivariate_normal.pdf multivariate_normal.logpdf
        multivariate_normal.entropy dirichlet.pdf dirichlet.logpdf gamma.pdf gamma.cdf
        gamma.logpdf beta.pdf beta.cdf beta.logpdf chi2.pdf chi2.cdf chi2.logpdf poisson.pmf
        poisson.cdf poisson.logpmf
    """,
    "scipy.linalg": "sqrtm solve_sylvester solve_triangular solve_banded",
    "scipy.signal": "convolve",
    "scipy.integrate": "odeint",
}
TIER2 = {
    "numpy": """
        cumprod nancumsum nansum nanmean nanvar nanstd nanmax nanmin median percentile quantile
        average cov corrcoef take take_along_axis select piecewise interp trapezoid convolve
        correlate polyval cbrt heaviside
        logical_and logical_or logical_not logical_xor greater greater_equal less less_equal
        equal not_equal sign floor ceil round trunc rint argmax argmin argsort nonzero
        meshgrid eye identity zeros_like ones_like full_like vdot block flip append insert
        delete isclose allclose
    """,
    "numpy.linalg": """qr eigvalsh eigvals lstsq matrix_power multi_dot tensorsolve tensorinv
                       matrix_norm vector_norm""",
    "scipy.special": """softmax log_softmax xlogy xlog1py entr rel_entr kl_div log_ndtr ndtr
                        ndtri logsumexp""",
    "scipy.stats": """
        logistic.pdf logistic.cdf logistic.logpdf laplace.pdf laplace.cdf laplace.logpdf
        expon.pdf expon.cdf expon.logpdf uniform.pdf uniform.cdf uniform.logpdf cauchy.pdf
        cauchy.cdf cauchy.logpdf lognorm.pdf lognorm.cdf lognorm.logpdf
    """,
    "scipy.linalg": "expm cho_factor cho_solve lu_factor lu_solve eigh solve",
}
NO_GRADIENT = set("""
    heaviside logical_and logical_or logical_not logical_xor greater greater_equal less
    less_equal equal not_equal sign floor ceil round trunc rint argmax argmin argsort nonzero
    isclose allclose gammasgn
""".split())
DISTRIBUTION_METHODS = set("pdf logpdf cdf logcdf sf logsf pmf logpmf entropy ppf isf".split())
CONSTANT = set("eye identity zeros_like ones_like full_like".split())
OPTIONAL = set("piecewise insert delete".split())
METHODS = {"astype": ("chainrule.numpy.numpy_boxes", "array_astype"),
           "indexing": ("chainrule.numpy.numpy_boxes", "array_getitem")}
# fmt: on


# ----------------------------------------------------------------------------- inspection
def is_traced_primitive(obj) -> bool:
    return getattr(obj, "__code__", None) in _TRACED_CODES


def is_notrace_primitive(obj) -> bool:
    return getattr(obj, "__code__", None) is _NOTRACE_CODE


def _is_chainrule_function(obj) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return (isinstance(obj, types.FunctionType) and not is_traced_primitive(obj)
            and not is_notrace_primitive(obj) and module.startswith("chainrule")
            and not module.startswith("chainrule._core"))  # the machinery, not functions


def _code_names(code: types.CodeType) -> Iterable[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_names(const)


def primitives_reached(fun, depth: int = 4) -> list:
    """The traced primitives a chainrule wrapper function calls (through helper functions
    of its module up to ``depth`` levels), in first-use order."""
    found: dict = {}
    seen: set = set()

    def visit(f, level):
        if id(f) in seen or level > depth:
            return
        seen.add(id(f))
        names = list(_code_names(f.__code__))
        referenced = [f.__globals__.get(name) for name in names]
        referenced += [cell.cell_contents for cell in f.__closure__ or ()
                       if cell.cell_contents is not None]
        # ``anp.sin(x)``: attributes of chainrule modules the function refers to
        modules = [m for m in referenced if isinstance(m, types.ModuleType)
                   and m.__name__.startswith("chainrule")]
        referenced += [getattr(m, name, None) for m in modules for name in names]
        for obj in referenced:
            if is_traced_primitive(obj):
                found.setdefault(id(obj), obj)
            elif _is_chainrule_function(obj):
                visit(obj, level + 1)

    visit(fun, 0)
    return list(found.values())


@dataclass
class Row:
    """One differentiable function."""

    namespace: str
    name: str
    kind: str                         # "primitive", "wrapper", "composite" or "method"
    primitives: list
    orders: dict = field(default_factory=dict)  # mode -> highest order tested
    vjp: bool | None = field(init=False)  # every primitive reached has a rule (None: unknown)
    jvp: bool | None = field(init=False)
    batch: bool | None = field(init=False)  # ... a batching rule (no: vmap runs it per example)
    sparsity: str = field(init=False)  # "yes", or "dense: why" (sparsity detection)
    taylor: str = field(init=False)  # Taylor mode's rule: "recurrence", "linear" ... (jet)

    def __post_init__(self):
        if self.kind == "composite":  # its primitives are only known when it runs
            self.vjp = self.jvp = self.batch = None
            self.sparsity = self.taylor = "?"
            return
        from .numpy.batched import batching_rule

        self.vjp = bool(self.primitives) and all(p in primitive_vjps for p in self.primitives)
        self.jvp = bool(self.primitives) and all(p in primitive_jvps for p in self.primitives)
        self.batch = bool(self.primitives) and all(batching_rule(p) is not None
                                                   for p in self.primitives)
        self.sparsity = _sparsity(self.primitives)
        self.taylor = _taylor(self.primitives)

    @property
    def qualname(self) -> str:
        return f"{self.namespace}.{self.name}"

    def tested(self) -> str:
        if not self.orders:
            return "-"
        if len(set(self.orders.values())) == 1 and len(self.orders) == 2:
            return str(next(iter(self.orders.values())))
        return ", ".join(f"{mode} {self.orders[mode]}" for mode in sorted(self.orders))


GENERIC_TAYLOR = "generic (nested JVP)"


def _taylor(primitives: list) -> str:
    """How Taylor mode (``jet``) pushes a series through the primitives: the kind of their
    closed-form rules ("recurrence", "linear", "multilinear"; several: "closed form"), or
    "generic (nested JVP)" where one has none (exact, O(2^order)), or "no" without a JVP."""
    if not primitives:
        return "-"
    kinds = set()
    for p in primitives:
        entry = rule_table.get(p)
        rule = getattr(entry, "taylor", None)
        if rule is not None:
            kinds.add(getattr(rule, "kind", "closed form"))
        elif getattr(entry, "jvp", None) is not None:
            return GENERIC_TAYLOR
        else:
            return "no"
    return kinds.pop() if len(kinds) == 1 else "closed form"


def _sparsity(primitives: list) -> str:
    """"yes" where every primitive declares its sparsity pattern (``defsparsity``), else
    why detection counts it dense: the reason its rule gives, or "undeclared"."""
    reasons = []
    for p in primitives:
        rule = getattr(rule_table.get(p), "sparsity", None)
        if rule is None:
            reasons.append("undeclared")
        elif getattr(rule, "dense_because", None):
            reasons.append(rule.dense_because)
    if not primitives:
        return "-"
    return "dense: " + "; ".join(dict.fromkeys(reasons)) if reasons else "yes"


def _public(module) -> list[tuple[str, object]]:
    return [(name, getattr(module, name)) for name in sorted(dir(module))
            if not name.startswith("_")]


def _scan(namespace: str, module, prefix: str = "", depth: int = 0) -> list[Row]:
    rows = []
    for name, obj in _public(module):
        if depth and name not in DISTRIBUTION_METHODS:
            continue  # helpers a distribution module happens to import
        qual = prefix + name
        if is_traced_primitive(obj):
            rows.append(Row(namespace, qual, "primitive", [obj]))
        elif _is_chainrule_function(obj):
            reached = primitives_reached(obj)
            rows.append(Row(namespace, qual, "wrapper" if reached else "composite", reached))
        elif depth == 0 and name in _containers(namespace):
            # distributions (scipy.stats.norm...) are modules or objects holding functions
            rows.extend(_scan(namespace, obj, qual + ".", depth + 1))
    return rows


def _containers(namespace: str) -> set[str]:
    """Names the tier lists use as containers of functions (``norm`` in ``norm.pdf``)."""
    names = (TIER1.get(namespace, "") + " " + TIER2.get(namespace, "")).split()
    return {name.split(".")[0] for name in names if "." in name}


def _method_rows() -> list[Row]:
    rows = []
    for name, (owner, attr) in METHODS.items():
        obj = getattr(importlib.import_module(owner), attr, None)
        rows.append(Row("numpy", name, "method", [obj] if is_traced_primitive(obj) else []))
    return rows


def _import(module_name: str):
    try:
        return importlib.import_module(module_name), None
    except ImportError as err:
        return None, str(err).splitlines()[0]


# ----------------------------------------------------------------------------- specs
def load_cases(specs_dir: Path) -> tuple[list, list[str]]:
    """All ``Case`` objects of the spec modules in ``specs_dir`` (a package whose
    ``spec_*.py`` modules define ``CASES``), and the errors of modules that failed."""
    specs_dir = Path(specs_dir).resolve()
    init = specs_dir / "__init__.py"
    if not init.exists():
        raise FileNotFoundError(f"No spec package at {specs_dir} (expected __init__.py there).")
    package = _spec_package(specs_dir, init)
    cases, errors = [], []
    for info in sorted(pkgutil.iter_modules([str(specs_dir)]), key=lambda m: m.name):
        if not info.name.startswith("spec_"):
            continue
        try:
            module = importlib.import_module(f"{package}.{info.name}")
        except Exception as err:  # a broken spec module is reported, not fatal
            errors.append(f"{info.name}: {type(err).__name__}: {err}")
            continue
        cases.extend(getattr(module, "CASES", []))
    return cases, errors


def _spec_package(specs_dir: Path, init: Path) -> str:
    """Import the spec package (reusing it when the tests already did) and return its name."""
    for name in (f"{__package__}._specs", specs_dir.name,
                 f"_chainrule_coverage_{abs(hash(str(specs_dir)))}"):
        module = sys.modules.get(name)
        if module is not None:
            paths = [Path(p).resolve() for p in getattr(module, "__path__", [])]
            if specs_dir in paths:
                return name
    name = f"_chainrule_coverage_{abs(hash(str(specs_dir)))}"
    spec = importlib.util.spec_from_file_location(name, init,
                                                  submodule_search_locations=[str(specs_dir)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return name


def _attach_orders(rows: list[Row], cases: list) -> list[str]:
    """Record each case's order on its row; returns names of cases matching no row."""
    by_fun: dict = {}
    by_name: dict = {}
    for row in rows:
        if row.kind == "primitive":
            by_fun.setdefault(id(row.primitives[0]), []).append(row)
        short = row.namespace.rsplit(".", 1)[-1]
        for key in (row.qualname, f"{short}.{row.name}"):
            by_name.setdefault(key, [row])
        by_name.setdefault(row.name, [row])  # bare names go to the first namespace
        if row.kind == "method":  # indexing's primitive is array_getitem, ...
            by_name.setdefault(row.primitives[0].__name__ if row.primitives else "", [row])
    unmatched = []
    for case in cases:
        matched = by_name.get(case.name)
        if matched is None:
            unmatched.append(case.name)
            continue
        if matched[0].kind == "primitive":  # aliases (abs, absolute) share one primitive
            matched = by_fun[id(matched[0].primitives[0])]
        for row in matched:
            for mode in case.modes:
                row.orders[mode] = max(row.orders.get(mode, 0), case.order)
    return sorted(set(unmatched))


# ----------------------------------------------------------------------------- report
@dataclass
class Gap:
    tier: int
    namespace: str
    name: str
    reason: str


@dataclass
class Report:
    rows: list[Row]
    tiers: dict                      # tier -> (complete, total)
    tiers_tested: dict               # tier -> complete ones that a spec case tests
    gaps: list[Gap]
    notes: list[str]
    specs_read: bool
    no_gradient: int = 0             # non-differentiable functions that accept traced values

    def totals(self) -> dict:
        rows = self.rows
        return {
            "functions": len(rows),
            "with VJP": sum(r.vjp is True for r in rows),
            "with JVP": sum(r.jvp is True for r in rows),
            "with both": sum(r.vjp is True and r.jvp is True for r in rows),
            "with a batching rule (vmap; the others run once per example)": sum(
                r.batch is True for r in rows),
            "with a sparsity rule (the others: dense, see the sparsity column)": sum(
                r.sparsity == "yes" for r in rows),
            "with a closed-form Taylor rule (jet; the others nest the JVP)": sum(
                r.taylor not in (GENERIC_TAYLOR, "no", "?", "-") for r in rows),
            "composite (?: rules of the primitives called at run time)": sum(
                r.kind == "composite" for r in rows),
            "tested": sum(bool(r.orders) for r in rows),
            "tested to order 2 in both modes": sum(
                r.orders.get("fwd", 0) >= 2 and r.orders.get("rev", 0) >= 2 for r in rows),
            "non-differentiable, accepting traced values": self.no_gradient,
        }

    def text(self, markdown: bool = False) -> str:
        header = ["function", "VJP", "JVP", "batch", "sparsity", "taylor", "tested orders",
                  "kind"]
        body = [[r.qualname, _yes(r.vjp), _yes(r.jvp), _yes(r.batch), r.sparsity, r.taylor,
                 r.tested(), r.kind] for r in self.rows]
        out = ["chainrule coverage: differentiable functions", ""]
        out += _table(header, body, markdown)
        out += ["", "Totals:"] + [f"- {k}: {v}" for k, v in self.totals().items()]
        for tier, (done, total) in sorted(self.tiers.items()):
            out.append(f"- Tier {tier}: {done}/{total} complete, "
                       f"{self.tiers_tested[tier]} of them tested by a spec case")
        if not self.specs_read:
            out.append("- tested orders: spec tables not found (see --specs)")
        for tier in sorted(self.tiers):
            gaps = [g for g in self.gaps if g.tier == tier]
            out += ["", f"Tier {tier} gaps ({len(gaps)}):"]
            out += _table(["function", "reason"], [[f"{g.namespace}.{g.name}", g.reason]
                                                    for g in gaps], markdown) if gaps else ["none"]
        if self.notes:
            out += ["", "Notes:"] + [f"- {note}" for note in self.notes]
        return "\n".join(out) + "\n"


def _yes(flag: bool | None) -> str:
    return "?" if flag is None else "yes" if flag else "no"


def _table(header: list[str], body: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return lines + ["| " + " | ".join(f"`{c}`" if i == 0 else c for i, c in enumerate(row))
                        + " |" for row in body]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*header).rstrip(), fmt.format(*("-" * w for w in widths))] + [
        fmt.format(*row).rstrip() for row in body]


def _tier_status(namespace: str, name: str, module, rows_by_name: dict,
                 reference) -> str | None:
    """'' when ``name`` is covered, None when the library version lacks it, else the
    reason it is not covered."""
    lacking = reference is not None and not hasattr(reference, name)
    if "." not in name and name not in METHODS and lacking:
        return None  # not in this NumPy/SciPy version: nothing to cover
    row = rows_by_name.get(name)
    if name in CONSTANT:
        return "" if hasattr(module, name) else "missing"
    if name in NO_GRADIENT:
        obj = _resolve(module, name)
        if is_notrace_primitive(obj) or is_traced_primitive(obj) or row is not None:
            return ""
        return "missing" if obj is None else "not wrapped: fails on traced values"
    if row is not None:
        return _rule_gap(row)
    obj = _resolve(module, name)
    suffix = " (optional: document it)" if name in OPTIONAL else ""
    if obj is None:
        return "missing" + suffix
    if is_notrace_primitive(obj):
        return "wrapped as non-differentiable" + suffix
    return "not wrapped: the library's own function, fails on traced values" + suffix


def _rule_gap(row: Row) -> str:
    if row.kind == "composite":
        return ""  # Python code over primitives: differentiable if they are (see its specs)
    if not row.primitives:
        return "no primitive found"
    missing = [mode for mode, ok in (("VJP", row.vjp), ("JVP", row.jvp)) if not ok]
    return f"no {' and no '.join(missing)} rule" if missing else ""


def _resolve(module, dotted: str):
    obj = module
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
    return obj


def _reference_module(namespace: str):
    try:
        return importlib.import_module(namespace)
    except ImportError:
        return None


def collect(specs_dir: Path | str | None = DEFAULT_SPECS) -> Report:
    """Build the coverage report; ``specs_dir=None`` skips the spec tables."""
    rows: list[Row] = []
    modules: dict = {}
    notes: list[str] = []
    no_gradient = 0
    for namespace, module_name in NAMESPACES:
        module, error = _import(module_name)
        modules[namespace] = module
        if module is None:
            notes.append(f"{module_name} not importable: {error}")
            continue
        rows.extend(_scan(namespace, module))
        no_gradient += sum(is_notrace_primitive(obj) for _, obj in _public(module))
        if namespace == "numpy":
            rows.extend(_method_rows())
    specs_read = False
    if specs_dir is not None and Path(specs_dir).is_dir():
        cases, errors = load_cases(Path(specs_dir))
        specs_read = True
        notes += [f"spec module failed to import: {e}" for e in errors]
        unmatched = _attach_orders(rows, cases)
        if unmatched:
            notes.append("spec cases naming no differentiable function: " + ", ".join(unmatched))
    tiers, tiers_tested, gaps = {}, {}, []
    for tier, lists in ((1, TIER1), (2, TIER2)):
        total = done = tested = 0
        for namespace, names in lists.items():
            if modules.get(namespace) is None:
                total += len(names.split())
                gaps.append(Gap(tier, namespace, "*", f"{len(names.split())} functions: "
                                f"chainrule.{namespace} is not importable"))
                continue
            rows_by_name = {r.name: r for r in rows if r.namespace == namespace}
            # the library itself, to skip names this version lacks (chainrule's module
            # imported it already, so this costs nothing)
            reference = _reference_module(namespace)
            for name in names.split():
                reason = _tier_status(namespace, name, modules[namespace], rows_by_name,
                                      reference)
                if reason is None:
                    continue
                total += 1
                if reason:
                    gaps.append(Gap(tier, namespace, name, reason))
                else:
                    done += 1
                    tested += bool(name in rows_by_name and rows_by_name[name].orders)
        tiers[tier] = (done, total)
        tiers_tested[tier] = tested
    return Report(rows, tiers, tiers_tested, gaps, notes, specs_read, no_gradient)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chainrule.coverage",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true", help="write Markdown tables")
    parser.add_argument("--specs", type=Path, default=DEFAULT_SPECS,
                        help=f"spec tables directory (default: {DEFAULT_SPECS})")
    parser.add_argument("--no-specs", action="store_true", help="do not read spec tables")
    args = parser.parse_args(argv)
    if not args.no_specs and not args.specs.is_dir() and args.specs != DEFAULT_SPECS:
        parser.error(f"--specs {args.specs}: not a directory")
    report = collect(None if args.no_specs else args.specs)
    sys.stdout.write(report.text(markdown=args.markdown))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
