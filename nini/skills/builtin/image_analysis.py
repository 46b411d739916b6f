"""The ``image_analysis`` skill: show a chart or picture to the model that serves purpose image_analysis."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from nini.errors import ErrorCode, NiniError
from nini.skills.function import skill

if TYPE_CHECKING:
    from nini.session import Session

MEDIA_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp", ".gif": "image/gif"}
MAX_IMAGE_BYTES = 20 * 1024 * 1024  # what the common vision APIs accept per image
DEFAULT_QUESTION = "Describe this image. For a chart: its type, axes, the main pattern and any outliers."


@skill("image_analysis", category="visualization", read_only=True)
async def image_analysis(session: Session, image: str, question: str = DEFAULT_QUESTION) -> dict[str, Any]:
    """Ask a vision-capable model about an image: a chart artifact's name or a PNG/JPEG/WebP/GIF path in the workspace.

    Args:
        image: An artifact name (as listed for the session) or a path relative to the session workspace.
        question: What to ask about the image.
    """
    relative = await session.store.call(_artifact_path, session, image) or image
    path = session.workspace.resolve(relative)
    media_type = MEDIA_TYPES.get(path.suffix.lower())
    if not path.is_file():
        raise NiniError(ErrorCode.NOT_FOUND, f"no image {image!r} among the session's artifacts or workspace files")
    if media_type is None:
        accepted = ", ".join(sorted(MEDIA_TYPES))
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"{image!r} is not an image a model can read (accepted: {accepted})")
    size = path.stat().st_size
    if size > MAX_IMAGE_BYTES:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"{image!r} is {size:,} bytes; the limit is {MAX_IMAGE_BYTES:,}")
    data_url = f"data:{media_type};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"
    content = [{"type": "text", "text": question}, {"type": "image_url", "image_url": {"url": data_url}}]
    try:
        completion = await session.runtime.router.complete(
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
    return {"image": session.workspace.relative(path), "answer": completion.text, "model": completion.model}


def _artifact_path(session: Session, name: str) -> str | None:
    for row in reversed(session.store.list_artifacts(session.id)):
        if name in (row["name"], row["path"]):
            return row["path"]
    return None
