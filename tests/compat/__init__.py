"""autograd 1.9.1's test suite and examples run against chainrule (issue 17).

``python -m tests.compat`` runs the tests (see run.py); ``python -m tests.compat.examples``
runs the examples on autograd and on chainrule (see examples.py). Not collected by the
normal pytest run: no file here is named test_*.py.
"""
