"""The transforms: functions of functions, built on the engine's ``make_vjp`` and
``make_jvp``. Read in this order:

1. ``derivatives``: autograd's API (``grad``, ``jacobian``, ``hessian``, the products);
   each transform is written once for one argument and lifted to ``argnum``.
2. ``functional``: the functional API with JAX's signatures (``jvp``, ``vjp``,
   ``jacfwd``, ``jacrev``, ``custom_vjp``, ``custom_jvp``).
3. ``vmap``: a function mapped over a batch axis (the batched values are
   ``chainrule.numpy.batched``; each primitive's batching rule sits with its other rules).
"""
