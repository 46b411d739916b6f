"""nini: a data-analysis agent that lives inside Jupyter."""

__version__ = "0.1.0"


def load_ipython_extension(ipython):  # noqa: ANN001, ANN201 - IPython's hook signature
    """``%load_ext nini`` in a notebook: register the ``%nini`` and ``%%nini_r`` magics.

    A deliberate exception to DESIGN.md's "nothing in nini imports jupyter_ext": IPython looks
    this hook up on the module named in ``%load_ext``, so it has to live here. The import stays
    inside the function, so importing nini never loads jupyter_ext.
    """
    from jupyter_ext.magics import load_ipython_extension as load

    load(ipython)
