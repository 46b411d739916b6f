"""Policy-checked R execution through rpy2 in an isolated worker process.

Depends only on the standard library, rpy2 and pandas so that it can run as its own worker
(``python -m r_sandbox.worker``). The policy checker and worker arrive with their own issue.
"""
