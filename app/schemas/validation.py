"""What a client sends, checked where it enters the app: request models,
form and query fields, uploaded lines. Every string is bounded and valid
Unicode, every number is read by one parser, every list is bounded and
free of duplicates, and an error message repeats at most a short excerpt
of what was sent."""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated

from fastapi.exceptions import RequestValidationError
from pydantic import AfterValidator, Field, StringConstraints, ValidationError

from inference.core.bounds import MAX_CALL_INDEX_KEYS, MAX_INDEX, MAX_NAME_CHARS
from inference.core.hook_names import HOOK_NAME

ECHO_CHARS = 60  # the most of a client's string that an error message repeats
MAX_URL_BYTES = 16 * 1024  # the longest request target (path and query string) a client may send; longer: 414
MAX_HEAD_BYTES = 2 * MAX_URL_BYTES  # request line and headers together, while they arrive; longer: 431
URL_TOO_LONG = f"the URL is over {MAX_URL_BYTES:,} bytes: send long input in a POST body"
HEAD_TOO_LARGE = f"the request line and headers are over {MAX_HEAD_BYTES:,} bytes"
MAX_FIELD_CHARS = 20_000  # any text field; the configured text limit (Settings.max_text_chars) is checked after this
MAX_NUMBER_DIGITS = 9
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # C0 and C1 controls, tab and newlines excepted
NUMBER = re.compile(rf"[0-9]{{1,{MAX_NUMBER_DIGITS}}}")  # ASCII digits: str.isdigit() also accepts '²', '①', '٣'
DECIMAL = re.compile(r"[+-]?([0-9]{1,9}(\.[0-9]{0,9})?|\.[0-9]{1,9})")  # float() also accepts '١', '1_0', 'nan', 'inf'
VISIBLE_CATEGORIES = ("L", "N", "P", "S")  # letters, numbers, punctuation, symbols
MAX_PROBLEMS = 5  # validation problems listed in one message
TUPLE_ERRORS = ("tuple_type", "too_long", "too_short")


class InputError(ValueError):
    """Input the user can fix; shown as a 4xx with this message."""


def shown(value: str, limit: int = ECHO_CHARS) -> str:
    """A client's string as an error message may repeat it: quoted, cut to `limit` characters."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}… ({len(value):,} characters)"


def valid_unicode(text: str) -> str:
    """Refuse unpaired surrogates (they cannot be encoded, so no tokenizer or
    database can take them) and control characters other than tab and newlines."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InputError(
            f"the text holds an unpaired surrogate (U+{ord(text[error.start]):04X}) at character {error.start}: "
            "send valid Unicode"
        ) from None
    control = CONTROL.search(text)
    if control:
        raise InputError(
            f"the text holds a control character (U+{ord(control.group()):04X}) at character {control.start()}"
        )
    return text


def visible_text(text: str) -> str:
    """Stripped text with at least one letter, number, punctuation mark or
    symbol: zero-width, bidi and space characters alone are no sentence."""
    text = valid_unicode(text).strip()
    if not text:
        raise InputError("the text is empty: type a sentence")
    if not any(unicodedata.category(char).startswith(VISIBLE_CATEGORIES) for char in text):
        raise InputError(
            "the text has no visible character (only spaces, zero-width, bidi or control characters): type a sentence"
        )
    return text


def parse_number(text: str, what: str) -> int:
    """One whole number in ASCII digits (the JSON API's integers and the forms' typed numbers read alike)."""
    text = text.strip()
    if not NUMBER.fullmatch(text):
        raise InputError(
            f"cannot read {what} {shown(text)}: "
            f"write a whole number in ASCII digits (at most {MAX_NUMBER_DIGITS}), e.g. 12"
        )
    return int(text)


def parse_decimal(text: str, what: str) -> float:
    """One decimal number in ASCII digits, e.g. 0, 10, -2.5 or .5."""
    text = text.strip()
    if not DECIMAL.fullmatch(text):
        raise InputError(f"cannot read {what} {shown(text)}: write a decimal number in ASCII digits, e.g. 0, 10 or 2.5")
    return float(text)


def parse_numbers(text: str, what: str, limit: int) -> tuple[int, ...]:
    """'12, 40 7' -> (12, 40, 7): at most `limit` numbers, duplicates dropped, order kept."""
    items = text.replace(",", " ").split()
    if len(items) > limit:
        raise InputError(f"{len(items):,} {what}s given; at most {limit:,}")
    return tuple(dict.fromkeys(parse_number(item, what) for item in items))


# Field types for request models and form fields.
FieldText = Annotated[str, Field(max_length=MAX_FIELD_CHARS), AfterValidator(valid_unicode)]
ModelName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_NAME_CHARS, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"),
    Field(description="checkpoint name, as listed by GET /api/models", examples=["memtransformer_10"]),
]
JobId = Annotated[
    str,
    StringConstraints(pattern=r"^[0-9a-f]{12}$"),
    Field(description="job id, as returned when the job was submitted"),
]
ModuleName = Annotated[str, StringConstraints(pattern=HOOK_NAME)]
Reference = Annotated[
    str,
    StringConstraints(pattern=r"^(demo|multi30k_test_2016|[0-9a-f]{12})$"),
    Field(
        description='"demo", "multi30k_test_2016" (read from the data directory) '
        "or the job id of an uploaded .tsv corpus"
    ),
]
# Which call of a hook point, where it runs more than once in a run (segment, step, decoding position).
CallIndex = Annotated[
    dict[
        Annotated[str, StringConstraints(pattern=r"^[a-z_]{1,30}$")],
        Annotated[int, Field(ge=0, le=MAX_INDEX)],
    ],
    Field(max_length=MAX_CALL_INDEX_KEYS),
]
INTEGRATION_STEPS = (8, 16, 32, 64)  # integrated gradients' path steps a client may ask for


def _integration_steps(steps: int) -> int:
    if steps not in INTEGRATION_STEPS:
        raise ValueError(f"integration steps are one of {', '.join(map(str, INTEGRATION_STEPS))}")
    return steps


IntegrationSteps = Annotated[int, AfterValidator(_integration_steps)]


def validation_message(error: RequestValidationError | ValidationError) -> str:
    """A validation error in words, its problems joined: "text: Field required; layer: Input should be ..."."""
    problems = error.errors()
    parts = []
    for problem in problems[:MAX_PROBLEMS]:
        where = ".".join(
            shown(p, 40) if isinstance(p, str) and len(p) > 40 else str(p)
            for p in problem.get("loc", ())
            if p not in ("body", "query", "form", "path")
        )
        message = str(problem.get("msg"))
        if problem.get("type") in TUPLE_ERRORS:  # a tuple of the core's models is a list in JSON
            message = message.replace("valid tuple", "list").replace("Tuple should", "List should")
        parts.append(f"{where}: {message}" if where else message)
    if len(problems) > MAX_PROBLEMS:
        parts.append(f"and {len(problems) - MAX_PROBLEMS:,} more problems")
    return "; ".join(parts) or "invalid request"
