"""chainrule.numpy.random: NumPy's random module (sampling has no derivative)."""

from numpy.random import *  # noqa: F401,F403
from numpy.random import RandomState, default_rng, seed  # noqa: F401
