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

# The wrappers, then the rule tables that importing registers (a rule table imports the
# wrappers it gives rules to, never the reverse).
from . import integrate, linalg, misc, optimize, signal, sparse, special, stats  # noqa: E402
from .rules import linalg as _linalg_rules  # noqa: E402,F401
from .rules import special as _special_rules  # noqa: E402,F401

__all__ = ["integrate", "linalg", "misc", "optimize", "signal", "sparse", "special", "stats"]
