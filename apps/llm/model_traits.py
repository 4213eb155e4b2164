"""How well-known model families compare on cost, speed and intelligence: the table the hub uses to
honour a sampling request's numeric model preferences (MCP `costPriority`, `speedPriority`,
`intelligencePriority`, each 0-1) when its name hints pick none of the user's models.

Each trait is a rough 0-1 rank within the families listed, not a measurement: `cost` is high for a
cheap model, `speed` for a fast one, `intelligence` for a capable one. A model is matched by the
first family whose name is a substring of the model's name (lower-cased), so order matters:
"gpt-4o-mini" before "gpt-4o". A model no family matches has no traits and is never chosen by
priorities (the request then falls back to the chat's or run's model, else the user's default).

A provider may set its own models' traits (`Provider.model_traits`, on the Models page and the
provider API: {model name: {"cost", "speed", "intelligence"}}, checked by `validate`); those come
before the table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from django.core.exceptions import ValidationError

T = TypeVar("T")


@dataclass(frozen=True)
class Traits:
    cost: float
    speed: float
    intelligence: float


# (family substring, traits); first match wins.
FAMILIES: tuple[tuple[str, Traits], ...] = (
    ("claude-opus", Traits(cost=0.1, speed=0.3, intelligence=1.0)),
    ("claude-sonnet", Traits(cost=0.4, speed=0.6, intelligence=0.85)),
    ("claude-3-5-sonnet", Traits(cost=0.4, speed=0.6, intelligence=0.75)),
    ("claude-haiku", Traits(cost=0.8, speed=0.9, intelligence=0.55)),
    ("claude-3-5-haiku", Traits(cost=0.8, speed=0.9, intelligence=0.5)),
    ("gpt-5-nano", Traits(cost=0.95, speed=0.9, intelligence=0.5)),
    ("gpt-5-mini", Traits(cost=0.8, speed=0.8, intelligence=0.7)),
    ("gpt-5", Traits(cost=0.4, speed=0.4, intelligence=0.95)),
    ("gpt-4.1-nano", Traits(cost=0.95, speed=0.95, intelligence=0.4)),
    ("gpt-4.1-mini", Traits(cost=0.8, speed=0.85, intelligence=0.6)),
    ("gpt-4.1", Traits(cost=0.4, speed=0.6, intelligence=0.75)),
    ("gpt-4o-mini", Traits(cost=0.9, speed=0.9, intelligence=0.5)),
    ("gpt-4o", Traits(cost=0.4, speed=0.7, intelligence=0.7)),
    ("o4-mini", Traits(cost=0.6, speed=0.5, intelligence=0.85)),
    ("o3", Traits(cost=0.3, speed=0.3, intelligence=0.9)),
    ("gemini-2.5-pro", Traits(cost=0.4, speed=0.4, intelligence=0.9)),
    ("gemini-2.5-flash-lite", Traits(cost=0.95, speed=0.95, intelligence=0.45)),
    ("gemini-2.5-flash", Traits(cost=0.8, speed=0.85, intelligence=0.65)),
    ("deepseek-reasoner", Traits(cost=0.8, speed=0.3, intelligence=0.8)),
    ("deepseek-chat", Traits(cost=0.85, speed=0.6, intelligence=0.7)),
    ("llama", Traits(cost=0.9, speed=0.7, intelligence=0.4)),
    ("qwen", Traits(cost=0.9, speed=0.7, intelligence=0.5)),
    ("mistral", Traits(cost=0.85, speed=0.75, intelligence=0.45)),
)


MAX_OWN = 100  # models a provider may rank itself


def traits(model: str, own: Mapping[str, Any] | None = None) -> Traits | None:
    """`model`'s traits: as its provider set them (`own`, its model_traits), else the table's."""
    if own and model in own:
        return Traits(**own[model])
    name = model.lower()
    return next((t for family, t in FAMILIES if family in name), None)


def validate(value: Any) -> None:
    """A provider's own traits: {model name: {"cost", "speed", "intelligence"}, each 0-1}."""
    names = [f.name for f in fields(Traits)]
    if not isinstance(value, dict) or len(value) > MAX_OWN:
        raise ValidationError(
            f"Give model traits as an object of at most {MAX_OWN} model names, each with "
            '{"cost", "speed", "intelligence"} from 0 to 1.'
        )
    for model, ranks in value.items():
        if not model.strip() or len(model) > 200:
            raise ValidationError("A model name in the traits must be 1 to 200 characters.")
        if not isinstance(ranks, dict) or sorted(ranks) != sorted(names):
            raise ValidationError(f"Model {model!r} needs exactly cost, speed and intelligence.")
        for trait, rank in ranks.items():
            if isinstance(rank, bool) or not isinstance(rank, int | float) or not 0 <= rank <= 1:
                raise ValidationError(
                    f"Model {model!r}: {trait} must be a number from 0 to 1, not {rank!r}."
                )


def best(
    candidates: Iterable[tuple[T, str] | tuple[T, str, Mapping[str, Any]]],
    cost: float,
    speed: float,
    intelligence: float,
) -> T | None:
    """The candidate (anything, with its model name and optionally its provider's own traits)
    whose traits, weighted by the priorities, score highest; the first of equals (callers list the
    user's default first). None when every priority is 0 or no candidate's model has traits."""
    cost, speed, intelligence = (max(0.0, min(1.0, p)) for p in (cost, speed, intelligence))
    if not (cost or speed or intelligence):
        return None
    scored: Sequence[tuple[float, T]] = [
        (t.cost * cost + t.speed * speed + t.intelligence * intelligence, item)
        for item, model, *own in candidates
        if (t := traits(model, own[0] if own else None)) is not None
    ]
    top = max((score for score, _ in scored), default=None)
    return next((item for score, item in scored if score == top), None)
