"""The transforms: functions of functions, built on the engine's ``make_vjp`` and
``make_jvp`` (``chainrule._core``) and the values of ``chainrule.numpy``. In reading order:

1. ``options``: what every transform takes besides the function (``argnum`` or
   ``argnums``, lifted by ``unary_to_nary``; ``has_aux``).
2. ``derivatives``: autograd's API (``grad``, ``jacobian``, ``hessian``, the products),
   each written once for a function of one argument.
3. ``jacobians``: the ways to fill a Jacobian (by rows, by columns, by a recorded graph
   pushed forward at once), shared by ``jacobian``, ``jacrev`` and ``jacfwd``.
4. ``functional``: the functional API with JAX's signatures (``jvp``, ``vjp``,
   ``jacfwd``, ``jacrev``, ``custom_vjp``, ``custom_jvp``).
5. ``vmap``: a function mapped over a batch axis (the batched values are
   ``chainrule.numpy.batched``; each primitive's batching rule sits with its other rules).
6. ``colouring`` and ``sparse``: sparse Jacobians and Hessians, one sweep per colour of
   the pattern that ``chainrule._sparsity`` detects.
"""
