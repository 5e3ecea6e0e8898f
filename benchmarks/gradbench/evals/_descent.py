"""The gradient descent that particle and saddle prescribe, and their four AD mode pairs.

The step rule is the eval's (GradBench's cpp/gradbench/gd.hpp): a step of size eta along
the negative gradient is taken if it lowers the objective, eta doubles after ten steps
taken in a row and halves after a step refused; the search stops when the gradient or the
step is shorter than 1e-5. It runs on whatever the objective takes: plain arrays, or values
traced by an outer derivative (the nested AD these evals are about).
"""

from __future__ import annotations

from collections.abc import Callable

import chainrule
import chainrule.numpy as np

TOLERANCE = 1e-5

# a gradient function for each mode: forward mode (jacfwd, one tangent per input) or reverse
MODES: dict[str, Callable] = {"f": chainrule.jacfwd, "r": chainrule.grad}
VARIANTS = ("rr", "ff", "fr", "rf")  # (outer, inner) mode pairs, the eval's function names


def argmin(objective: Callable, gradient: Callable, x):
    fx, gx = objective(x), gradient(x)
    eta, steps_taken = 1e-5, 0
    while np.sqrt(np.sum(gx * gx)) > TOLERANCE:
        if steps_taken == 10:
            eta, steps_taken = eta * 2, 0
            continue
        x_new = x - eta * gx
        if np.sqrt(np.sum((x - x_new) ** 2)) <= TOLERANCE:
            break
        f_new = objective(x_new)
        if f_new < fx:
            x, fx, gx = x_new, f_new, gradient(x_new)
            steps_taken += 1
        else:
            eta, steps_taken = eta / 2, 0
    return x


def argmax(objective: Callable, gradient: Callable, x):
    return argmin(lambda x: -objective(x), lambda x: -gradient(x), x)


def max_value(objective: Callable, gradient: Callable, x):
    return objective(argmax(objective, gradient, x))
