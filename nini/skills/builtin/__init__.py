"""nini's built-in function skills.

They are registered through ``SkillRegistry.register`` like any other function skill; each
capability adds its skill module here (run_code, run_r_code, generate_report, ...). The modules
import heavy machinery (kernels, pandas) only when a skill runs, so listing skills stays fast.
"""

from __future__ import annotations

from nini.skills.builtin.datasets import load_dataset
from nini.skills.builtin.run_code import run_code
from nini.skills.function import FunctionSkill

BUILTIN_SKILLS: list[FunctionSkill] = [load_dataset, run_code]
