"""chainrule.scipy.optimize: SciPy's solvers, differentiable by the implicit function theorem.

Each solver runs SciPy itself on plain values (no tape through its iterations, so memory
does not grow with the iteration count). The solution x* is then tied to the traced
parameters by a system F(x*, theta) = 0 that holds there:

- ``minimize``: F = the gradient of the objective (with active bounds, F_i = x_i - bound_i);
- ``root``, ``root_scalar``, ``brentq``, ``newton``...: F = the residual;
- ``least_squares``: F = J^T r, the gradient of the cost (normal equations);
- ``fixed_point``: F = x - func(x).

Differentiating F(x*(theta), theta) = 0 gives dx* = -(dF/dx)^{-1} dF/dtheta dtheta:
reverse mode solves once with (dF/dx)^T and pulls the result back through F in theta;
forward mode pushes the tangent through F in theta and solves once. The solve is dense for
small systems and matrix-free above ``DENSE_LIMIT`` unknowns (Jacobian- or Hessian-vector
products with SciPy's ``cg`` or ``gmres``). Both rules are written with chainrule's own
operations, the matrix-free solve being itself an implicit solution of a linear system, so
derivatives of every order work in both modes.

Traced parameters reach the solve as explicit inputs: those passed in ``args``, and those
held in the objective's own closure cells and default arguments (``lambda x: f(x, theta)``
inside the function being differentiated), which are moved into the arguments
(``_closure.lift_closure``, shared with ``chainrule.scipy.integrate``). A traced value
reached any other way (a global, an object's attribute, the closure of another function the
objective calls) cannot be followed through a solver that calls the objective on plain
values: it is refused with an error naming the fix (pass it in ``args``), never given a
silently zero derivative.
"""

from __future__ import annotations

import scipy.optimize as _so
import scipy.sparse.linalg as _spla  # noqa: F401 (the matrix-free solves' module)

from ...numpy import _namespace
from .._closure import ClosedOverTracedValueError
from ._bounds import NEAR_BOUND  # noqa: F401 (the tuning constants, as before the split)
from ._implicit_system import (  # noqa: F401
    CONVERGED_STEP_TOL,
    DENSE_LIMIT,
    FAILED_STEP_TOL,
    FLAT_DIRECTION,
    ITERATIVE_RTOL,
    LINEAR_SOLVERS,
    DegenerateBoundError,
    NotConvergedError,
    NotDifferentiableError,
    SingularSystemError,
)
from ._least_squares import HUBER_SWITCH, least_squares  # noqa: F401
from ._minimize import minimize, minimize_scalar
from ._results import RefusedField
from ._roots import bisect, brenth, brentq, fixed_point, newton, ridder, root, root_scalar, toms748

# SciPy's other names (result types, linear programming, ...), undifferentiated
_namespace.install(globals(), _so)

__all__ = [
    "minimize",
    "minimize_scalar",
    "root",
    "root_scalar",
    "brentq",
    "brenth",
    "bisect",
    "ridder",
    "toms748",
    "newton",
    "least_squares",
    "fixed_point",
    "ClosedOverTracedValueError",
    "NotConvergedError",
    "SingularSystemError",
    "DegenerateBoundError",
    "NotDifferentiableError",
    "RefusedField",
    "DENSE_LIMIT",
]

# (the public names are this module's, as before the split: their reprs, pickles, docs
# and doctests name chainrule.scipy.optimize, not the file that defines them)
for _name in __all__:
    if getattr(globals()[_name], "__module__", "").startswith(__name__ + "."):
        globals()[_name].__module__ = __name__
del _name
