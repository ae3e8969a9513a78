"""The one leak-free description of a pydantic `ValidationError`, for refusals of untrusted input.

pydantic's own message quotes the input, and an error's ``loc`` for an unexpected key
is that key: both may be untrusted text (a judge's reply, a recorded row, a label
file). `describe_validation_error` is the only way citemark turns a validation
failure into a message. It names a failure by a field of the schema and pydantic's
error type, never by the input, the input's keys or pydantic's wording; a key the
schema does not define is one fixed phrase whatever it is. A whole-model failure
(no ``loc``) raised by a citemark validator is one of citemark's own structural
sentences and is kept as written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

    from pydantic import ValidationError

__all__ = ["describe_validation_error"]

# The error type of a ValueError raised in a validator; its message is citemark's own.
_OWN_MESSAGE: Final = "value_error"
_VALUE_ERROR_PREFIX: Final = "Value error, "


def describe_validation_error(  # noqa: PLR0913 - each knob is one caller's wording
    exc: ValidationError,
    fields: Collection[str],
    *,
    unknown: str = "unexpected field",
    own_types: Collection[str] = (),
    phrasing: Literal["terse", "sentence"] = "terse",
    requirements: Mapping[str, str] | None = None,
    most: int | None = None,
) -> str:
    """Describe ``exc`` by the schema's field names and pydantic's error types only.

    Args:
        exc: The failure.
        fields: The schema's field names; a ``loc`` outside them is never printed.
        unknown: What a key outside ``fields`` (or an ``extra_forbidden`` one) is called.
        own_types: Custom error types, besides ``value_error``, whose message citemark
            wrote (a ``PydanticCustomError``); on a whole-model failure it is kept.
        phrasing: ``"terse"`` gives ``end (int_type)``, joined by ``", "``;
            ``"sentence"`` gives ``missing field 'faithful'`` and ``field 'x' item 2
            must be a string (string_type)``, joined by ``"; "``.
        requirements: For ``"sentence"``, what each error type requires
            (``{"string_type": "must be a string"}``).
        most: How many distinct parts are listed before ``and N more``; all when ``None``.

    Returns:
        The distinct parts, in the order pydantic reports them.

    Example:
        ```python
        from pydantic import BaseModel, ConfigDict, ValidationError

        from citemark._contract.validation import describe_validation_error

        class Row(BaseModel):
            model_config = ConfigDict(extra="forbid")
            end: int

        try:
            Row.model_validate({"end": "secret", "password=hunter2": 1})
        except ValidationError as exc:
            print(describe_validation_error(exc, Row.model_fields))
        #> end (int_parsing), unexpected field
        ```
    """
    own = {_OWN_MESSAGE, *own_types}
    parts: list[str] = []
    # include_input/include_context off: neither may reach even this function's result.
    for error in exc.errors(include_url=False, include_context=False, include_input=False):
        kind, loc = error["type"], error["loc"]
        if not loc:
            part = error["msg"].removeprefix(_VALUE_ERROR_PREFIX) if kind in own else kind
        elif kind == "extra_forbidden" or loc[0] not in fields:
            part = unknown
        elif phrasing == "terse":
            part = f"{loc[0]} ({kind})"
        else:
            part = _sentence(kind, loc, requirements or {})
        if part not in parts:
            parts.append(part)
    if most is not None and len(parts) > most:
        parts[most:] = [f"and {len(parts) - most} more"]
    return (", " if phrasing == "terse" else "; ").join(parts)


def _sentence(kind: str, loc: tuple[int | str, ...], requirements: Mapping[str, str]) -> str:
    field = f"field {loc[0]!r}"
    if kind == "missing":
        return f"missing {field}"
    if len(loc) > 1 and isinstance(loc[1], int):
        field = f"{field} item {loc[1] + 1}"
    requirement = requirements.get(kind)
    return f"{field} {requirement} ({kind})" if requirement else f"{field}: {kind}"
