"""``chainrule.save`` and ``chainrule.load``: state dicts in a NumPy file, without pickle.

    chainrule.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "epoch": 7}, "checkpoint.npz")
    checkpoint = chainrule.load("checkpoint.npz")
    model.load_state_dict(checkpoint["model"])

The file is a NumPy ``.npz`` archive (written to the path exactly as given): each array
is one ``.npy`` member, and the nesting (dicts with string or integer keys, lists,
tuples, numbers, strings, booleans, None, arrays and Tensors) is described by one JSON
text member. Loading runs no code from the file (``numpy.load(allow_pickle=False)``), so
a checkpoint from elsewhere is as safe to open as a data file. Objects other than those
(a whole Module, a function) are refused with the path to them: save ``state_dict()``s.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections import OrderedDict
from typing import IO, Any

import numpy as _np

from .tensor import Tensor

__all__ = ["save", "load"]

_STRUCTURE = "__chainrule_structure__"  # the member holding the nesting, as JSON text
_FORMAT = 1


def save(obj: Any, f: str | os.PathLike | IO[bytes]) -> None:
    """Write ``obj`` (a state dict, or any nesting of dicts, lists, tuples, numbers,
    strings, None, arrays and Tensors) to the path or binary file ``f``, as
    ``torch.save`` does for such objects, in NumPy's ``.npz`` format."""
    arrays: dict[str, _np.ndarray] = {}
    structure = {"format": _FORMAT, "value": _encode(obj, arrays, "obj")}
    members = {_STRUCTURE: _np.array(json.dumps(structure, allow_nan=True)), **arrays}
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as file:  # a path is used as given (numpy would add ".npz")
            _np.savez(file, **members)
    else:
        _np.savez(f, **members)


def load(f: str | os.PathLike | IO[bytes], map_location: Any = None,
         weights_only: bool | None = None) -> Any:
    """Read what ``save`` wrote. Arrays come back as NumPy arrays, Tensors as Tensors
    (with their ``requires_grad``; nn.Parameters as Parameters). ``map_location`` (only
    None or "cpu": chainrule has no devices) and ``weights_only`` are accepted for code
    written for ``torch.load``; loading never runs code from the file either way."""
    if map_location not in (None, "cpu"):
        raise ValueError(f"load(map_location={map_location!r}): chainrule has no devices.")
    try:
        archive = _np.load(f, allow_pickle=False)
    except (ValueError, zipfile.BadZipFile) as error:  # (a missing file raises as it is)
        raise ValueError(f"{_name(f)} is not a file chainrule.save wrote: {error}") from error
    if not isinstance(archive, _np.lib.npyio.NpzFile) or _STRUCTURE not in archive.files:
        raise ValueError(
            f"{_name(f)} is not a file chainrule.save wrote (a NumPy .npz archive with a "
            f"{_STRUCTURE} member). A file written by torch.save is a pickle, which chainrule "
            f"does not load; a plain .npy/.npz file is read with numpy.load."
        )
    with archive:
        structure = json.loads(str(archive[_STRUCTURE][()]))
        if structure.get("format") != _FORMAT:
            raise ValueError(f"{_name(f)}: unknown chainrule.save format {structure.get('format')}")
        return _decode(structure["value"], archive)


def _name(f) -> str:
    return repr(os.fspath(f)) if isinstance(f, (str, os.PathLike)) else "the file"


# A value in the JSON text is itself where JSON has it (str, int, float, bool, None, list);
# everything else is an object with one key saying what it is.
def _encode(value, arrays: dict, path: str):
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)) and type(value) in (int, float):
        return value
    if isinstance(value, Tensor):
        if value.requires_grad and not value.is_leaf:
            raise TypeError(
                f"chainrule.save: {path} is a computed Tensor that requires grad; save "
                f"its value (.detach()) or the state_dict() it belongs to."
            )
        key = _store(arrays, value.numpy())
        kind = type(value).__name__
        return {"tensor": key, "requires_grad": value.requires_grad,
                "parameter": kind == "Parameter"}
    if isinstance(value, (_np.ndarray, _np.generic)):
        if value.dtype.hasobject:
            raise TypeError(f"chainrule.save: {path} is an array of Python objects.")
        return {"array": _store(arrays, _np.asarray(value)), "scalar": value.ndim == 0
                and isinstance(value, _np.generic)}
    if isinstance(value, complex):
        return {"complex": [value.real, value.imag]}
    if type(value) in (dict, OrderedDict):
        items = []
        for key, item in value.items():
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                raise TypeError(
                    f"chainrule.save: {path} has the key {key!r}; keys must be strings or "
                    f"integers."
                )
            items.append([key, _encode(item, arrays, f"{path}[{key!r}]")])
        return {"dict": items, "type": type(value).__name__}
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        encoded = [_encode(item, arrays, f"{path}[{i}]") for i, item in enumerate(value)]
        return encoded if type(value) is list else {"tuple": encoded}
    raise TypeError(
        f"chainrule.save: {path} is a {type(value).__name__}, which it does not store. It "
        f"stores state dicts: dicts, lists, tuples, numbers, strings, None, arrays and "
        f"Tensors (save model.state_dict(), not the model)."
    )


def _store(arrays: dict, array: _np.ndarray) -> str:
    key = f"a{len(arrays)}"
    arrays[key] = array
    return key


def _decode(value, archive):
    if isinstance(value, list):
        return [_decode(item, archive) for item in value]
    if not isinstance(value, dict):
        return value
    if "tensor" in value:
        array = archive[value["tensor"]]
        if value["parameter"]:
            from .nn import Parameter

            return Parameter(array, requires_grad=value["requires_grad"])
        return Tensor(array, requires_grad=value["requires_grad"])
    if "array" in value:
        array = archive[value["array"]]
        return array[()] if value["scalar"] else array
    if "complex" in value:
        return complex(*value["complex"])
    if "tuple" in value:
        return tuple(_decode(item, archive) for item in value["tuple"])
    if "dict" in value:
        kind = OrderedDict if value["type"] == "OrderedDict" else dict
        return kind((key, _decode(item, archive)) for key, item in value["dict"])
    raise ValueError(f"chainrule.load: unreadable entry {value!r}")

