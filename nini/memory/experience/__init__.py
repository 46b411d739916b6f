"""Experience memory: capture judgements from analyses, confirm them with the user, curate them
into INDEX.md libraries (team and project), and bring them back into the runs they matter to.
``ExperienceMemory`` (service.py) is the one entry point the surfaces use."""

from nini.memory.experience.service import CaptureResult, ExperienceMemory

__all__ = ["CaptureResult", "ExperienceMemory"]
