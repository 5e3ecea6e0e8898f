"""ba: ADBench's bundle adjustment residuals and their sparse Jacobian.

Observation i sees point ``obs[i, 1]`` from camera ``obs[i, 0]``; a camera is 11 numbers
(Rodrigues rotation, centre, focal length, principal point, two radial distortion
coefficients). The residuals are ``w_i (projection - feature)`` and ``1 - w_i^2``. Each
observation's two residuals depend on its camera, its point and its weight only, so the
Jacobian is assembled from 2 x 15 blocks, one per observation, computed for all
observations at once by ``vmap`` of a forward-mode ``jacfwd``, into the CSR layout of the
eval's reference (rows of 15 entries for the reprojection residuals, then one entry per
weight residual). The eval sends one camera, point, weight and feature, repeated: they are
repeated here into full arrays (not timed), and every observation is computed.
"""

from __future__ import annotations

import numpy

import chainrule
import chainrule.numpy as np

from ..protocol import Function
from . import compiled

N_CAM = 11  # rotation (3), centre (3), focal length, principal point (2), distortion (2)


def cross(u, v):
    """The cross product along the last axis (vmap batches these slices; np.cross it would
    run example by example)."""
    u0, u1, u2 = u[..., 0], u[..., 1], u[..., 2]
    v0, v1, v2 = v[..., 0], v[..., 1], v[..., 2]
    return np.stack([u1 * v2 - u2 * v1, u2 * v0 - u0 * v2, u0 * v1 - u1 * v0], axis=-1)


def rodrigues_rotate(rotation, point):
    """Rotate ``point`` by the angle-axis vector ``rotation`` (the last axis is xyz)."""
    angle_squared = np.sum(rotation * rotation, axis=-1, keepdims=True)
    nonzero = angle_squared != 0
    angle = np.sqrt(np.where(nonzero, angle_squared, 1.0))
    axis = rotation / angle
    cos, sin = np.cos(angle), np.sin(angle)
    rotated = (point * cos + cross(axis, point) * sin
               + axis * np.sum(axis * point, axis=-1, keepdims=True) * (1 - cos))
    return np.where(nonzero, rotated, point + cross(rotation, point))


def project(camera, point):
    rotated = rodrigues_rotate(camera[..., 0:3], point - camera[..., 3:6])
    projected = rotated[..., 0:2] / rotated[..., 2:3]
    radius_squared = np.sum(projected * projected, axis=-1, keepdims=True)
    distortion = (1 + camera[..., 9:10] * radius_squared
                  + camera[..., 10:11] * radius_squared * radius_squared)
    return projected * distortion * camera[..., 6:7] + camera[..., 7:9]


def reprojection_error(camera, point, weight, feature):
    return weight[..., None] * (project(camera, point) - feature)


def weight_error(weight):
    return 1 - weight * weight


def objective(cams, X, w, feats, obs):
    return reprojection_error(cams[obs[:, 0]], X[obs[:, 1]], w, feats), weight_error(w)


observation_jacobian = chainrule.vmap(chainrule.jacfwd(reprojection_error, argnums=(0, 1, 2)))


def jacobian(cams, X, w, feats, obs):
    """The Jacobian as CSR arrays (row pointers, columns, values), as the reference has it."""
    n, m, p = cams.shape[0], X.shape[0], w.shape[0]
    d_camera, d_point, d_weight = observation_jacobian(cams[obs[:, 0]], X[obs[:, 1]], w, feats)
    blocks = np.concatenate([d_camera, d_point, d_weight[..., None]], axis=2)  # p x 2 x 15
    block_columns = numpy.concatenate([
        N_CAM * obs[:, :1] + numpy.arange(N_CAM),
        N_CAM * n + 3 * obs[:, 1:] + numpy.arange(3),
        N_CAM * n + 3 * m + numpy.arange(p)[:, None]], axis=1)  # p x 15
    columns = numpy.concatenate([numpy.repeat(block_columns[:, None, :], 2, axis=1).ravel(),
                                 N_CAM * n + 3 * m + numpy.arange(p)])
    values = np.concatenate([blocks.ravel(), chainrule.elementwise_grad(weight_error)(w)])
    rows = numpy.concatenate([15 * numpy.arange(2 * p + 1), 30 * p + numpy.arange(1, p + 1)])
    return rows, columns, values


def prepare(raw: dict) -> tuple:
    n, m, p = int(raw["n"]), int(raw["m"]), int(raw["p"])
    observation = numpy.arange(p)
    return (numpy.tile(numpy.array(raw["cam"], dtype=float), (n, 1)),
            numpy.tile(numpy.array(raw["x"], dtype=float), (m, 1)),
            numpy.full(p, float(raw["w"])),
            numpy.tile(numpy.array(raw["feat"], dtype=float), (p, 1)),
            numpy.stack([observation % n, observation % m], axis=1))


def objective_output(errors) -> dict:
    reprojection, weight = errors
    return {"reproj_error": {"elements": reprojection[0].tolist(), "repeated": len(weight)},
            "w_err": {"element": float(weight[0]), "repeated": len(weight)}}


def jacobian_output(csr) -> dict:
    """The first 30 entries and the last of each array: the eval checks no more."""
    return {name: numpy.concatenate([array[:30], array[-1:]]).tolist()
            for name, array in zip(("rows", "cols", "vals"), csr)}


def functions(jit: bool) -> dict[str, Function]:
    return {"objective": Function(prepare, compiled(objective, jit), objective_output),
            "jacobian": Function(prepare, compiled(jacobian, jit), jacobian_output)}


def small_input(rng: numpy.random.Generator) -> dict:
    camera = rng.normal(size=N_CAM)
    camera[6] += 400  # a focal length in pixels
    return {"n": 3, "m": 5, "p": 12, "cam": camera.tolist(), "x": rng.normal(size=3).tolist(),
            "w": float(rng.random()), "feat": rng.normal(size=2).tolist()}
