"""chainrule on GradBench: the tool (``tool.py``, eval implementations in ``evals/``), the
driver (``python -m benchmarks.gradbench``) and the profile (``profile.py``, PROFILE.md).
See README.md in this folder."""
