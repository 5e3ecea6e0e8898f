"""chainrule.scipy.integrate: ``odeint``, ``solve_ivp`` and ``quad`` with derivatives
that never go through the solvers' internal steps.

``odeint(func, y0, t, args=())`` solves dy/dt = func(y, t, *args) with SciPy's
odeint:

- reverse mode solves the adjoint ODE backwards in time, segment by segment
  between the output times, for the state y, the adjoint a (da/dt = -a df/dy)
  and the parameter integrals (dp/dt = -a df/dargs); the cotangent of each output
  time t_i is g_i . f(y_i, t_i), and that of t_0 is -a(t_0) . f(y_0, t_0);
- forward mode integrates the forward sensitivity s (ds/dt = df/dy s +
  df/dargs dargs) from s(t_0) = dy0 - f(y_0, t_0) dt_0; the output tangent is
  s(t_i) + f(y_i, t_i) dt_i.

The adjoint and sensitivity systems are solved by ``odeint`` itself, so they are
differentiable in turn: derivatives of every order, in both modes (as autograd's
odeint, whose adjoint is built the same way).

``solve_ivp`` uses the same equations with any of SciPy's methods; for first
derivatives its adjoint reads y(t) from the forward solve's dense interpolant
(checkpoints) instead of solving y backwards, and it runs the VJP (adjoint) or JVP
(sensitivities) of the right-hand side as a program staged once per solve with
``chainrule.jit`` (``_staged``). Event times are differentiated by the implicit
function theorem on the event function. ``quad`` differentiates the limits by
Leibniz's rule and the integrand's parameters by integrating the integrand's
derivative.

The functions must be written with chainrule.numpy (chainrule differentiates them).
Traced values they close over are found and differentiated like ``args``. Gradients
are exact up to the solvers' tolerances (``rtol``, ``atol``, ``epsabs``, ``epsrel``
are passed on to every solve).
"""

from __future__ import annotations

# (the face: the public names of the modules below, then SciPy's other names)
import scipy.integrate as _si

from ...numpy import _namespace
from .._staged import Staged  # noqa: F401
from ._adjoint import checkpointed_adjoint  # noqa: F401
from ._ivp_values import ivp_values  # noqa: F401
from ._odeint import odeint, odeint_args  # noqa: F401
from ._quad import quad, quad_value  # noqa: F401
from ._solve_ivp import solve_ivp  # noqa: F401

_namespace.install(globals(), _si)  # SciPy's other names (those above win)

# (the public names are this module's, as before the split: their reprs, pickles, docs
# and doctests name chainrule.scipy.integrate, not the file that defines them)
for _name in ("checkpointed_adjoint", "ivp_values", "odeint", "odeint_args", "quad",
              "quad_value", "solve_ivp"):
    globals()[_name].__module__ = __name__
del _name
