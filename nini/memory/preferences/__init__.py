"""Preference learning: explicit rules the user writes, implicit ones learned from their feedback,
a few injected into each prompt, all visible and under the user's control. ``PreferenceMemory``
(service.py) is the entry point the surfaces use."""

from nini.memory.preferences.service import PreferenceMemory, project_id_for

__all__ = ["PreferenceMemory", "project_id_for"]
