"""Skills: function skills (Python, registered in code) and Markdown skills (SKILL.md on disk)."""

from nini.skills.function import FunctionSkill, skill
from nini.skills.records import SkillDefinition, SkillProblem, SkillRecord
from nini.skills.registry import SkillRegistry

__all__ = ["FunctionSkill", "SkillDefinition", "SkillProblem", "SkillRecord", "SkillRegistry", "skill"]
