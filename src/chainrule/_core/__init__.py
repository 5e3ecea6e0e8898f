"""The engine: everything below the NumPy layer, in the order to read it.

1. ``tracer``: boxes, trace ids and ``primitive``, the wrapper that records a call of a
   primitive on a traced value as a *node* (the mode that made the trace decides the node
   type). Knows no calculus.
2. ``rule_table``: one ``PrimitiveRules`` entry per primitive (VJP, JVP, batched JVP, what
   the VJP reads, explain's label); ``rules``: the functions that fill the entries
   (``defvjp``, ``defjvp``, ``defvjp_direct`` ... for user code and the rule tables).
3. ``vspace`` and ``pytree``: zeros, addition and shapes of values, and flattening of
   containers of values (transforms take and return any pytree).
4. ``forward``: JVP nodes compute tangents as they are made (no graph kept);
   ``reverse``: VJP nodes keep what their rules read, and one iterative backward pass
   pulls cotangents back from the outputs; a ``Recording`` is a graph pulled back (or
   pushed forward, batched) many times; ``taylor``: Taylor nodes carry a truncated power
   series per value (``jet``), with a primitive's Taylor rule or its JVP nested.
5. ``containers``: the boxes of tuples, lists and dicts returned by primitives;
   ``heap``: what a reverse-mode graph grew glibc's heap by stays there for the next
   gradient (no page faults per call).

6. ``extension``: how the layers above plug in (read it before adding a capability).

Nothing here imports from the layers above (``chainrule.numpy``, transforms, explain,
Tensor); they plug into the core at the places ``extension`` lists: node types' methods,
observers, registrations of value types, call handlers, ``rule_table``. Nothing above
swaps a function or a constructor of the engine.
"""
