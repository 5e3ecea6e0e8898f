"""The public API shows its real parameters (help, inspect.signature, IDEs) and types."""

import builtins
import inspect
import pathlib

import pytest

import chainrule
from chainrule._transforms import derivatives, functional

# Classes whose constructor is Python's own (chainrule's tuple/list/dict are the builtin
# containers under autograd's names; an exception class takes a message).
PYTHONS_OWN = {"tuple", "list", "dict", "LeakedTracerError"}

PUBLIC_CALLABLES = sorted(
    name
    for name in chainrule.__all__
    if callable(getattr(chainrule, name)) and name not in PYTHONS_OWN
)
TRANSFORMS = sorted(set(derivatives.__all__) | set(functional.__all__))


def test_the_exempt_names_are_pythons_own_classes():
    for name in PYTHONS_OWN:
        cls = getattr(chainrule, name)
        assert issubclass(cls, (builtins.tuple, builtins.list, builtins.dict, Exception))


@pytest.mark.parametrize("name", PUBLIC_CALLABLES)
def test_signature_is_real_and_annotated(name):
    signature = inspect.signature(getattr(chainrule, name))
    kinds = [p.kind for p in signature.parameters.values()]
    assert kinds != [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD], name
    annotated = [p for p in signature.parameters.values() if p.annotation is not p.empty]
    assert annotated or signature.return_annotation is not signature.empty, (name, signature)


@pytest.mark.parametrize("name", TRANSFORMS)
def test_every_transform_parameter_and_result_is_annotated(name):
    signature = inspect.signature(getattr(chainrule, name))
    for parameter in signature.parameters.values():
        assert parameter.annotation is not parameter.empty, (name, parameter)
    if not inspect.isclass(getattr(chainrule, name)):
        assert signature.return_annotation is not signature.empty, name


@pytest.mark.parametrize(
    "name", ["grad", "value_and_grad", "jacobian", "hessian", "elementwise_grad"]
)
def test_autograd_and_jax_options_are_in_the_signature(name):
    fun = getattr(chainrule, name)
    parameters = inspect.signature(fun).parameters
    sparse = ["sparse"] if name in ("jacobian", "hessian") else []  # docs/sparse.md
    assert list(parameters) == ["fun", "argnum", "argnums", "has_aux", *sparse]
    assert parameters["argnums"].kind is inspect.Parameter.KEYWORD_ONLY
    assert parameters["has_aux"].default is False
    assert "(fun, x)" not in str(inspect.signature(fun))


@pytest.mark.parametrize("name", ["jacfwd", "jacrev"])
def test_jax_jacobians_take_jax_parameters_in_jax_order(name):
    parameters = inspect.signature(getattr(chainrule, name)).parameters
    assert list(parameters) == ["fun", "argnums", "has_aux"]
    assert parameters["argnums"].default == 0


def test_help_shows_the_parameters():
    text = pydoc_text(chainrule.grad)
    assert "grad(fun: 'Callable', argnum: 'int | Sequence[int] | None' = None, *" in text
    assert "has_aux" in text and "Returns a function which computes the gradient" in text


def pydoc_text(obj) -> str:
    import pydoc

    return pydoc.plain(pydoc.render_doc(obj))


def test_package_ships_py_typed():
    package = pathlib.Path(chainrule.__file__).parent
    assert (package / "py.typed").is_file()
    tomllib = pytest.importorskip("tomllib")
    pyproject = package.parents[1] / "pyproject.toml"
    if not pyproject.is_file():
        pytest.skip("chainrule is installed, not run from a source tree")
    config = tomllib.loads(pyproject.read_text())
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["chainrule"]
