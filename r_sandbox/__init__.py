"""Policy-checked R execution through rpy2 in an isolated worker process.

``policy`` checks R code with R's own parser before anything runs; ``client.RWorkerPool`` keeps
one worker (``python -m r_sandbox.worker``, rpy2 embedded) per session and talks JSON lines to it.
Depends only on the standard library, rpy2 and pandas/pyarrow, so the worker runs on its own.
"""
