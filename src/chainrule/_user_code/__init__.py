"""What chainrule reads of the user's code, for the transforms and jit: the line a warning
belongs to (``lines``), and the random generators and arrays a function reaches outside
itself (``reach``)."""
