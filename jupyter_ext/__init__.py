"""nini's Jupyter integration: the server extension and the IPython kernel extension.

The server extension (REST + WebSocket under /nini/api/) and the ``%nini`` magics arrive with
their own issue; this package exists now so the distribution's layout matches DESIGN.md.
"""
