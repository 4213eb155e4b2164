"""What each provider API takes of a message's pictures and sounds (light: no SDK imports, so the
hub can check a request before loading an adapter)."""

from __future__ import annotations

# What Anthropic's Messages API takes as a base64 image (it takes no audio).
ANTHROPIC_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})

# What OpenAI's chat completions `input_audio` takes, by MIME type (images: any, as data URLs).
OPENAI_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}
