"""The ``image_analysis`` skill: show a chart or picture to the model that serves purpose image_analysis."""

from __future__ import annotations

import base64
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from nini.errors import ErrorCode, NiniError
from nini.skills.function import skill
from nini.skills.services import services_of

if TYPE_CHECKING:
    from nini.session import Session

MEDIA_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".gif": "image/gif",
}
MAX_IMAGE_BYTES = 20 * 1024 * 1024  # what the common vision APIs accept per image
DEFAULT_QUESTION = "Describe this image. For a chart: its type, axes, the main pattern and any outliers."


@skill("image_analysis", category="visualization", read_only=True)
async def image_analysis(session: Session, image: str, question: str = DEFAULT_QUESTION) -> dict[str, Any]:
    """Ask a vision-capable model about an image: a chart artifact's name or a PNG/JPEG/WebP/GIF path in the workspace.

    Args:
        image: An artifact name (as listed for the session) or a path relative to the session workspace.
        question: What to ask about the image.
    """
    recorded = await session.store.call(_artifact_path, session, image)
    relative = session.workspace.relative(recorded or image)
    media_type = MEDIA_TYPES.get(PurePosixPath(relative).suffix.lower())
    if session.workspace.fs.lstat(relative) is None:
        raise NiniError(ErrorCode.NOT_FOUND, f"no image {image!r} among the session's artifacts or workspace files")
    if media_type is None:
        accepted = ", ".join(sorted(MEDIA_TYPES))
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT, f"{image!r} is not an image a model can read (accepted: {accepted})"
        )
    try:  # one open: a link or special file is refused, a swap after the check changes nothing
        data = session.workspace.fs.read_bytes(relative, limit=MAX_IMAGE_BYTES)
    except NiniError as exc:
        if exc.code is not ErrorCode.TOO_LARGE:
            raise
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT, f"{image!r} is larger than the limit of {MAX_IMAGE_BYTES:,} bytes"
        ) from None
    data_url = f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"
    content = [{"type": "text", "text": question}, {"type": "image_url", "image_url": {"url": data_url}}]
    try:
        completion = await services_of(session).router.complete(
            "image_analysis", [{"role": "user", "content": content}], require_vision=True
        )
    except NiniError as exc:
        if exc.code is not ErrorCode.NO_MODEL_AVAILABLE:
            raise
        raise NiniError(
            ErrorCode.NO_MODEL_AVAILABLE,
            "no vision-capable model is configured: list a model that accepts images in a provider's "
            f"vision_models (settings llm.providers) and route purpose image_analysis to it. {exc.message}",
            exc.details,
        ) from None
    return {"image": relative, "answer": completion.text, "model": completion.model}


def _artifact_path(session: Session, name: str) -> str | None:
    for row in reversed(session.store.list_artifacts(session.id)):
        if name in (row["name"], row["path"]):
            return row["path"]
    return None
