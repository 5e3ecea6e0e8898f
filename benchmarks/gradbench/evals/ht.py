"""ht: ADBench's hand tracking residuals and their dense Jacobian.

A skinned hand model is posed by 26 parameters (global rotation and translation, then four
angles per finger); the residuals are the 3D distances from the data points to their
corresponding model vertices (``us`` empty) or to points on model triangles given by
barycentric coordinates ``us`` (the "complicated" variant). The Jacobian has one column per
parameter, and in the complicated variant two more in front: the derivatives with respect
to each point's own two barycentric coordinates. Every residual depends on its own ``us``
only, so shifting all first (or second) coordinates together gives those two columns:
one ``jacfwd`` over 26 + 2 directions computes the whole Jacobian.
"""

from __future__ import annotations

import functools

import numpy

import chainrule
import chainrule.numpy as np

from ..protocol import Function
from . import compiled


@functools.lru_cache(maxsize=4)
def pose_layout(n_bones: int) -> numpy.ndarray:
    """Where each pose parameter comes from in [theta | 0 | 1]: an (n_bones + 3) x 3 table.

    Rows are the global rotation, the scale (ones), the global translation, then one row of
    Euler angles per bone: a finger's first joint has two angles, its other two one, and
    the row after each finger is zero.
    """
    zero, one = 26, 27
    layout = numpy.full((n_bones + 3, 3), zero)
    layout[0], layout[1], layout[2] = [0, 1, 2], one, [3, 4, 5]
    parameter = 6
    for finger in range(5):
        row = 5 + 4 * finger
        layout[row, :2] = [parameter, parameter + 1]
        layout[row + 1, 0], layout[row + 2, 0] = parameter + 2, parameter + 3
        parameter += 4
    return layout


def euler_rotations(angles):
    """Rz Ry Rx for each row of ``angles`` (x, z, y), stacked: n x 3 x 3."""
    cx, sx = np.cos(angles[:, 0]), np.sin(angles[:, 0])
    cy, sy = np.cos(angles[:, 2]), np.sin(angles[:, 2])
    cz, sz = np.cos(angles[:, 1]), np.sin(angles[:, 1])
    zero, one = np.zeros_like(cx), np.ones_like(cx)
    Rx = np.stack([one, zero, zero, zero, cx, -sx, zero, sx, cx], axis=1).reshape(-1, 3, 3)
    Ry = np.stack([cy, zero, sy, zero, one, zero, -sy, zero, cy], axis=1).reshape(-1, 3, 3)
    Rz = np.stack([cz, -sz, zero, sz, cz, zero, zero, zero, one], axis=1).reshape(-1, 3, 3)
    return Rz @ Ry @ Rx


def angle_axis_rotation(angle_axis):
    norm = np.sqrt(np.sum(angle_axis * angle_axis))
    if norm < 1e-4:
        return np.eye(3)
    x, y, z = angle_axis / norm
    s, c = np.sin(norm), np.cos(norm)
    return np.stack([
        np.stack([x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s]),
        np.stack([x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s]),
        np.stack([x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c])])


def skinned_vertices(theta, model):
    """The posed model's vertices, 3 x n_vertices."""
    n_bones = len(model["parents"])
    pose = np.concatenate([theta, np.array([0.0, 1.0])])[pose_layout(n_bones)]
    base = model["base_relatives"]
    relatives = np.concatenate([base[:, :, :3] @ euler_rotations(pose[3:]), base[:, :, 3:]],
                               axis=2)
    absolutes = []
    for bone, parent in enumerate(model["parents"]):
        absolutes.append(relatives[bone] if parent == -1 else absolutes[parent] @ relatives[bone])
    transforms = np.stack(absolutes) @ model["inverse_base_absolutes"]
    per_bone = transforms[:, :3, :] @ model["base_positions"].T  # bones x 3 x vertices
    vertices = np.sum(per_bone * model["weights"].T[:, None, :], axis=0)
    if model["is_mirrored"]:
        vertices = vertices * np.array([[-1.0], [1.0], [1.0]])
    rotation = angle_axis_rotation(pose[0]) * pose[1]  # column j scaled by pose[1, j]
    return rotation @ vertices + pose[2][:, None]


def residuals(theta, us, points, correspondences, model):
    vertices = skinned_vertices(theta, model)
    if us.shape[0] == 0:
        return (points - vertices[:, correspondences].T).ravel()
    corners = model["triangles"][correspondences]  # points x 3 vertex numbers
    u, v = us[:, 0], us[:, 1]
    on_triangle = (u * vertices[:, corners[:, 0]] + v * vertices[:, corners[:, 1]]
                   + (1 - u - v) * vertices[:, corners[:, 2]])
    return (points - on_triangle.T).ravel()


def jacobian(theta, us, points, correspondences, model):
    if us.shape[0] == 0:
        return chainrule.jacfwd(residuals)(theta, us, points, correspondences, model)

    def shifted(theta, shift):  # every point's (u, v) moved by the same shift
        return residuals(theta, us + shift, points, correspondences, model)

    d_theta, d_us = chainrule.jacfwd(shifted, argnums=(0, 1))(theta, np.zeros(2))
    return np.concatenate([d_us, d_theta], axis=1)


def prepare(raw: dict) -> tuple:
    data, model = raw["data"], raw["data"]["model"]
    arrays = {key: numpy.array(model[key], dtype=float) for key in
              ("base_relatives", "inverse_base_absolutes", "base_positions", "weights")}
    arrays |= {"parents": tuple(int(p) for p in model["parents"]),
               "triangles": numpy.array(model["triangles"], dtype=numpy.int64).reshape(-1, 3),
               "is_mirrored": bool(model["is_mirrored"])}
    return (numpy.array(raw["theta"], dtype=float),
            numpy.array(raw["us"], dtype=float).reshape(-1, 2),
            numpy.array(data["points"], dtype=float),
            numpy.array(data["correspondences"], dtype=numpy.int64), arrays)


def functions(jit: bool) -> dict[str, Function]:
    return {"objective": Function(prepare, compiled(residuals, jit), lambda e: e.tolist()),
            "jacobian": Function(prepare, compiled(jacobian, jit), lambda j: j.tolist())}


def small_input(rng: numpy.random.Generator, complicated: bool = True) -> dict:
    """A random hand shaped as the eval's: a wrist, five fingers of four bones, a forearm
    (22 bones), here with 30 vertices and 12 points."""
    n_bones, n_vertices, n_points = 22, 30, 12
    parents = [-1] + [p for f in range(5) for p in (0, 1 + 4 * f, 2 + 4 * f, 3 + 4 * f)] + [0]

    def transforms():
        return numpy.concatenate([rng.normal(size=(n_bones, 3, 4)),
                                  numpy.tile([0.0, 0, 0, 1], (n_bones, 1, 1))], axis=1)

    weights = rng.random((n_vertices, n_bones))
    triangles = rng.integers(0, n_vertices, (20, 3))
    points = rng.normal(size=(n_points, 3))
    return {"theta": rng.normal(size=26).tolist(),
            "us": rng.random((n_points, 2)).tolist() if complicated else [],
            "data": {"model": {"bone_count": n_bones,
                               "bone_names": [f"bone{b}" for b in range(n_bones)],
                               "parents": parents, "base_relatives": transforms().tolist(),
                               "inverse_base_absolutes": transforms().tolist(),
                               "base_positions": numpy.concatenate(
                                   [rng.normal(size=(n_vertices, 3)),
                                    numpy.ones((n_vertices, 1))], axis=1).tolist(),
                               "weights": (weights / weights.sum(1, keepdims=True)).tolist(),
                               "triangles": triangles.tolist(), "is_mirrored": False},
                     "correspondences": rng.integers(0, 20 if complicated else n_vertices,
                                                     n_points).tolist(),
                     "points": points.tolist()}}
