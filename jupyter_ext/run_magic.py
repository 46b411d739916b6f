"""``%%nini_run``: a cell whose code runs in nini's sandbox, never in this kernel.

    %%nini_run [--r] [--dataset NAME] [--save-as NAME] [--label TEXT] [--purpose P] [--timeout S]

This is how a sandboxed export (``nini sessions export --sandboxed``) re-runs the agent's steps as
contained as the first time: the cell's code goes through ``invoke`` (``run_code``, or
``run_r_code`` with ``--r``) in the notebook's nini session (``%nini session --new`` makes a fresh
one), so it runs in that session's sandboxed kernel or R worker and is recorded like any agent
step. Only text comes back to show (stdout, stderr, the JSON ``result``, charts as PNG); no
dataset is loaded into this kernel. The line is not expanded by IPython (``$x``, ``{x}``) and is
split into words as a POSIX shell would: an export writes the agent's label into it, quoted, and a
label must stay a label.
"""

from __future__ import annotations

import shlex
import sys
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

if TYPE_CHECKING:
    from jupyter_ext.magics import NiniMagics

PURPOSES = ("exploration", "visualization", "export", "transformation")


@magics_class
class NiniRunMagics(Magics):
    """``%%nini_run``, on the session and runtime of the notebook's ``NiniMagics``."""

    def __init__(self, shell: Any, nini: NiniMagics) -> None:
        super().__init__(shell)
        self._nini = nini

    @magic_arguments()
    @argument("--r", action="store_true", help="the cell is R: run it with run_r_code in the session's R worker")
    @argument("--dataset", metavar="NAME", help="the session's dataset NAME is `df` in the cell")
    @argument("--save-as", metavar="NAME", help="store the cell's `output_df` as the session's dataset NAME")
    @argument("--label", help="a short name of the step (charts are named after it)")
    @argument("--purpose", choices=PURPOSES, default="exploration")
    @argument("--timeout", type=float, metavar="S", help="seconds the step may take (default from settings)")
    @no_var_expand
    @cell_magic
    def nini_run(self, line: str, cell: str) -> None:
        """Run the cell in nini's sandboxed session kernel (not here), recorded like an agent step."""
        try:  # POSIX words: IPython's own splitting keeps the quotes of a quoted word
            args = self.nini_run.parser.parse_args(shlex.split(line))
        except ValueError as exc:
            raise UsageError(f"%%nini_run: {exc}") from None
        skill = "run_r_code" if args.r else "run_code"
        if args.r and not any(r["name"] == "run_r_code" for r in self._nini.runtime.registry.list("function")):
            from nini.skills.builtin.run_r import r_status

            print(f"nini: R cannot be used here: {r_status(self._nini.runtime.settings)[1]}", file=sys.stderr)
            return
        arguments = {
            "code": cell,
            "dataset_name": args.dataset,
            "save_as": args.save_as,
            "label": args.label,
            "purpose": args.purpose,
            "timeout_s": args.timeout,
        }
        self._nini._show(self._nini._invoke(skill, arguments))
