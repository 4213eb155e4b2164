"""What Alice types into an elicitation form is checked against the request's restricted schema
before the backend sees it."""

from __future__ import annotations

import pytest

from apps.chat.elicitation import ElicitationError, check_content, parse_answer

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "minLength": 2},
        "email": {"type": "string", "format": "email"},
        "born": {"type": "string", "format": "date"},
        "age": {"type": "integer", "minimum": 1, "maximum": 150},
        "ok": {"type": "boolean"},
        "hero": {"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}]},
        "fish": {
            "type": "array",
            "minItems": 1,
            "items": {"anyOf": [{"const": "f1"}, {"const": "f2"}]},
        },
    },
    "required": ["name"],
}


def test_values_that_fit_are_typed_as_the_schema_says():
    content = {"name": "Al", "email": "a@b.io", "born": "1990-02-03", "age": "42", "ok": True}
    assert check_content(
        SCHEMA, {**content, "hero": "h1", "fish": ["f2"], "born": "1990-02-03"}
    ) == {
        **content,
        "age": 42,
        "hero": "h1",
        "fish": ["f2"],
    }
    assert check_content(SCHEMA, {"name": "Al", "email": ""}) == {"name": "Al"}  # empty: not given


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ({}, "Name is required."),
        ({"name": "A"}, "Name needs at least 2 characters."),
        ({"name": "Al", "email": "nope"}, "email must be a valid email."),
        ({"name": "Al", "born": "31/12/1990"}, "born must be a valid date."),
        ({"name": "Al", "age": 2.5}, "age must be a whole number."),
        ({"name": "Al", "age": 200}, "age must be at most 150."),
        ({"name": "Al", "ok": "yes"}, "ok must be true or false."),
        ({"name": "Al", "hero": "h9"}, "hero: pick one of h1."),
        ({"name": "Al", "fish": []}, "fish: pick 1 to 2."),
        ({"name": "Al", "extra": 1}, "The form has no field 'extra'."),
    ],
)
def test_values_that_do_not_fit_are_refused_with_what_is_wrong(content, said):
    with pytest.raises(ElicitationError) as refused:
        check_content(SCHEMA, content)
    assert refused.value.message == said


def test_an_answer_needs_an_id_and_a_known_action():
    assert parse_answer({"id": "e1", "action": "decline", "content": {"x": 1}}) == (
        "e1",
        "decline",
        None,
    )
    for bad in (
        {"action": "accept"},
        {"id": "e1", "action": "sure"},
        {"id": "e1", "action": "accept", "content": []},
    ):
        with pytest.raises(ElicitationError):
            parse_answer(bad)
