"""``python -m nini.execution.probe``: what ``nini doctor`` runs inside the sandbox, as a kernel would
start there, to show the interpreter, nini and pandas are all reachable from inside."""

if __name__ == "__main__":
    import pandas  # noqa: F401 - what analysis code needs first

    print("sandboxed python ok")
