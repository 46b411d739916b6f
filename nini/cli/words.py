"""The CLI's own status lines in both languages: ``say(ctx, key, **fmt)``.

The words a spec gives (refusals, reports, templates, the experience and preference lines) live
with the code that says them; this table holds only the plain lines the commands print themselves
(``no sessions yet``, ``enabled NAME`` ...), so each has its Chinese form next to its English one.
The language is the command's: ``--lang``, else ``ui.language``, else the locale (``nini.language``).
Identifiers a script may read (``session: ID``, ``artifact: PATH``, ``error [CODE]``) stay as they are.
"""

from __future__ import annotations

import typer

from nini.cli._common import state

# key -> (English, Chinese); {names} are filled by say()
WORDS: dict[str, tuple[str, str]] = {
    "no_sessions": ("no sessions yet", "还没有会话"),
    "wrote": ("wrote {path}", "已写入 {path}"),
    "no_skills": ("no skills found", "没有找到技能"),
    "enabled": ("enabled {name}", "已启用 {name}"),
    "disabled": ("disabled {name}", "已停用 {name}"),
    "created": ("created {path}", "已创建 {path}"),
    "skills_dir_unread": (
        "warning: nini does not read skills from {folder}, so {name} will not be listed; add the folder to the "
        "setting skills.extra_dirs (settings.json, or NINI_SKILLS__EXTRA_DIRS='[\"{resolved}\"]')",
        "警告：nini 不从 {folder} 读取技能，所以不会列出 {name}；请把这个文件夹加入设置 skills.extra_dirs"
        "（settings.json，或 NINI_SKILLS__EXTRA_DIRS='[\"{resolved}\"]'）",
    ),
    "no_skill_problems": ("no problems: every skill loaded", "没有问题：所有技能都已加载"),
    "no_experience": ("no experience yet", "还没有经验"),
    "deprecate_ask": ("deprecate {entry} in {level}? [y/N] ", "要在 {level} 中弃用 {entry} 吗？[y/N] "),
    "nothing_changed": ("nothing changed", "没有任何改动"),
    "no_preferences": ("no preferences", "没有偏好"),
    "deleted_preference": ("deleted {id} ({pref})", "已删除 {id}（{pref}）"),
    "feedback_recorded": ("feedback {id} recorded ({action})", "已记录反馈 {id}（{action}）"),
    "no_providers": (
        "no providers: add one with nini models add NAME",
        "没有模型提供方：用 nini models add NAME 添加一个",
    ),
    "removed_provider": ("removed {name}", "已移除 {name}"),
    "no_model_to_test": ("no model to test: nini models add NAME", "没有可测试的模型：nini models add NAME"),
    "ask_cancelled": ("cancelled (the run is recorded as canceled)", "已取消（这次运行记为已取消）"),
    "no_session_kept": ("no session kept (nothing ran)", "没有保留会话（什么也没有运行）"),
}


def say(ctx: typer.Context, word: str, /, **fmt: object) -> str:
    """The line ``word`` in this command's language, its ``{names}`` filled from ``fmt``."""
    english, chinese = WORDS[word]
    return (chinese if state(ctx).settings.ui.current_language == "zh" else english).format(**fmt)
