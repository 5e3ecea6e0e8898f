"""chainrule.scipy.misc: autograd's home of ``logsumexp`` (now in scipy.special)."""

from .special import logsumexp

__all__ = ["logsumexp"]
