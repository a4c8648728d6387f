"""mtpsim: the cost and the gain of reusing sparse-attention top-k indices across MTP draft steps."""

__version__ = "0.1.0"
