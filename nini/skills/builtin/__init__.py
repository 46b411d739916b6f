"""nini's built-in function skills.

They are registered through ``SkillRegistry.register`` like any other function skill; each
capability adds its skill module here (run_code, run_r_code, generate_report, ...). The modules
import heavy machinery (kernels, pandas, R) only when a skill runs, so listing skills stays fast.
The agent's ``task:*`` skills are not here: skills sit below the agent, so the runtime adds them
to the registries it builds (``nini.agent.tasks.skill_registry``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nini.skills.builtin.browse import describe_dataset, list_datasets, read_file
from nini.skills.builtin.datasets import load_dataset
from nini.skills.builtin.experience import read_experience
from nini.skills.builtin.image_analysis import image_analysis
from nini.skills.builtin.notebook import propose_cell, read_notebook
from nini.skills.builtin.report import generate_report
from nini.skills.builtin.run_code import run_code
from nini.skills.builtin.run_r import r_status, run_r_code
from nini.skills.builtin.skill_tools import save_skill, search_skills
from nini.skills.function import FunctionSkill

if TYPE_CHECKING:
    from nini.config import Settings

BUILTIN_SKILLS: list[FunctionSkill] = [
    load_dataset,
    run_code,
    list_datasets,
    describe_dataset,
    read_file,
    image_analysis,
    search_skills,
    save_skill,
    generate_report,
    read_notebook,
    propose_cell,
    read_experience,
]


def builtin_skills(settings: Settings) -> list[FunctionSkill]:
    """The built-ins this installation can run: run_r_code only where R is usable (``r_status``)."""
    return BUILTIN_SKILLS + ([run_r_code] if r_status(settings)[0] else [])
