"""chainrule.scipy: SciPy's special functions, distributions, linear algebra,
convolution and ODE solver with derivatives in both modes.

SciPy is an optional dependency of chainrule; this package needs it.
"""

try:
    import scipy as _scipy  # noqa: F401
except ImportError as err:  # pragma: no cover - exercised with a monkeypatched import
    raise ImportError(
        "chainrule.scipy needs SciPy, which is not installed. Install it with "
        "`pip install chainrule[scipy]` (or `pip install scipy`)."
    ) from err

from . import integrate, linalg, misc, signal, special, stats  # noqa: E402

__all__ = ["integrate", "linalg", "misc", "signal", "special", "stats"]
from . import optimize  # noqa: E402,F401  (implicit-differentiation solvers)
