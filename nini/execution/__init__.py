"""Running agent code: Python kernels (jupyter_client), the sandbox, the static policy, workspaces."""
