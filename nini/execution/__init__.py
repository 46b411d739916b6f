"""Running agent code: Python kernels (jupyter_client) and R workers, the sandbox, the static policy, workspaces."""
