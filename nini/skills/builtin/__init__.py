"""nini's built-in function skills.

They are registered through ``SkillRegistry.register`` like any other function skill; each
capability adds its skill module here (run_code, run_r_code, generate_report, ...).
"""

from __future__ import annotations

from nini.skills.function import FunctionSkill

BUILTIN_SKILLS: list[FunctionSkill] = []
