"""lstm: ADBench's LSTM loss over a character sequence, and its gradient.

ADBench's cell is unusual: every weight "matrix" is a diagonal (elementwise weights), the
forget and output gates read the layer's input while the input gate and the candidate read
its previous hidden state, and the log-sum-exp of the prediction adds 2 inside the log.
``main_params`` holds two rows per layer (weights, biases), each the forget, input, output
and candidate blocks side by side; ``extra_params`` the input weights, output weights and
output biases; ``state`` two rows per layer (hidden, cell).
"""

from __future__ import annotations

import numpy

import chainrule
import chainrule.numpy as np

from ..protocol import Function
from . import compiled


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def lstm_loss(main_params, extra_params, state, sequence):
    n_layers = main_params.shape[0] // 2
    b = sequence.shape[1]
    weights = [np.split(main_params[2 * i], 4) for i in range(n_layers)]
    biases = [np.split(main_params[2 * i + 1], 4) for i in range(n_layers)]
    hidden = [state[2 * i] for i in range(n_layers)]
    cell = [state[2 * i + 1] for i in range(n_layers)]
    in_weight, out_weight, out_bias = extra_params
    total = 0.0
    for t in range(sequence.shape[0] - 1):
        layer_input = sequence[t] * in_weight
        for i in range(n_layers):
            (w_forget, w_in, w_out, w_change), (b_forget, b_in, b_out, b_change) = (
                weights[i], biases[i])
            forget = sigmoid(layer_input * w_forget + b_forget)
            in_gate = sigmoid(hidden[i] * w_in + b_in)
            out_gate = sigmoid(layer_input * w_out + b_out)
            change = np.tanh(hidden[i] * w_change + b_change)
            cell[i] = cell[i] * forget + in_gate * change
            hidden[i] = out_gate * np.tanh(cell[i])
            layer_input = hidden[i]
        prediction = layer_input * out_weight + out_bias
        normalized = prediction - np.log(np.sum(np.exp(prediction)) + 2)
        total = total + np.sum(sequence[t + 1] * normalized)
    return -total / (b * (sequence.shape[0] - 1))


def prepare(raw: dict) -> tuple:
    return tuple(numpy.array(raw[key], dtype=float)
                 for key in ("main_params", "extra_params", "state", "sequence"))


def jacobian_output(gradients) -> list:
    """The two gradients flattened row by row, one after the other."""
    return numpy.concatenate([g.ravel() for g in gradients]).tolist()


def functions(jit: bool) -> dict[str, Function]:
    gradient = chainrule.grad(lstm_loss, argnum=(0, 1))
    return {"objective": Function(prepare, compiled(lstm_loss, jit), float),
            "jacobian": Function(prepare, compiled(gradient, jit), jacobian_output)}


def small_input(rng: numpy.random.Generator) -> dict:
    layers, chars, bits = 2, 16, 14
    return {"main_params": rng.random((2 * layers, 4 * bits)).tolist(),
            "extra_params": rng.random((3, bits)).tolist(),
            "state": rng.random((2 * layers, bits)).tolist(),
            "sequence": rng.integers(0, 2, (chars, bits)).astype(float).tolist()}
