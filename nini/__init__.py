"""nini: a data-analysis agent that lives inside Jupyter."""

__version__ = "0.1.0"
