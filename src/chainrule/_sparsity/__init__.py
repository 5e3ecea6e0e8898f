"""The sparsity column, below the rule tables that use it: the local patterns primitives
declare (``patterns``), detection of a function's pattern by recording it once
(``detection``), and ``scipy.sparse`` matrices as traced values and operands
(``products``). The sparse transforms that colour a pattern and evaluate sparse Jacobians
and Hessians are in ``chainrule._transforms``."""
