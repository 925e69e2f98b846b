"""Token axes, typed: which token axis of a run a hook point's axis runs over (`TokenAxis`, declared by the
model), and the key of a token axis in a Trace's tokens and roles (`AxisKey`, set by the family's trace).

A model declares its hook points' axes in short strings ("enc", "enc.seq"); `TokenAxis.parse` reads them once,
strictly, when the hook point is built, and only the typed values flow after that.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class AxisRole(StrEnum):
    """What a token axis's positions are, from the small set the analyses and views understand. A family declares
    the role of every token axis it has (`Family.token_axes`); the analyses find an axis by its role."""

    SOURCE = "source"  # the input a model reads whole: a translator's source sentence
    TARGET = "target"  # the output, written one token at a time: a translation, a task's answer
    TEXT = "text"  # a language model's tokens: the text, then what it generates
    SEGMENT = "segment"  # one segment of a text read segment by segment, with the memory it reads and writes
    CONTEXT = "context"  # what a segment attends to: its own positions, and earlier segments' cached states
    STATE = "state"  # the cells of a recurrent state, one per source position

    @property
    def words(self) -> str:
        return AXIS_ROLE_WORDS[self]


AXIS_ROLE_WORDS = {
    AxisRole.SOURCE: "input positions",  # a source's tokens, after the memory slots of a model that has them
    AxisRole.TARGET: "output positions",
    AxisRole.TEXT: "text positions",
    AxisRole.SEGMENT: "the segment's positions",
    AxisRole.CONTEXT: "positions the segment attends to",
    AxisRole.STATE: "state cells",
}


ENCODER_DECODER_AXES = {"enc": AxisRole.SOURCE, "dec": AxisRole.TARGET}  # an encoder-decoder translator's axes


class AxisPart(StrEnum):
    """Which positions of a token axis a hook axis runs over."""

    ALL = "all"
    MEMORY = "mem"  # the memory positions, in order
    SEQUENCE = "seq"  # every other position, in order

    def __repr__(self) -> str:
        return f"AxisPart.{self.name}"


@dataclass(frozen=True)
class TokenAxis:
    """The token axis of a run that a hook point's axis runs over, e.g. the queries of a memory-only
    sub-layer run over the memory positions of "enc": TokenAxis("enc", AxisPart.MEMORY), written "enc.mem"."""

    name: str  # "enc", "dec", "tok", "seg", ...
    part: AxisPart = AxisPart.ALL

    @classmethod
    def parse(cls, text: str) -> TokenAxis:
        """ "enc" -> all of "enc"; "enc.mem" / "enc.seq" -> its memory / sequence positions.
        Raises ValueError on any other form."""
        name, dot, part = text.partition(".")
        if not name.isidentifier():
            raise ValueError(f"token axis {text!r}: {name!r} is not an axis name")
        if not dot:
            return cls(name)
        parts = (AxisPart.MEMORY, AxisPart.SEQUENCE)
        if part not in parts:
            raise ValueError(f"token axis {text!r}: unknown part {part!r}; a part is one of {', '.join(parts)}")
        return cls(name, AxisPart(part))

    def __str__(self) -> str:
        return self.name if self.part is AxisPart.ALL else f"{self.name}.{self.part}"

    def __repr__(self) -> str:  # as a session prints it: TokenAxis('enc'), TokenAxis('enc', AxisPart.MEMORY)
        return f"TokenAxis({self.name!r})" if self.part is AxisPart.ALL else f"TokenAxis({self.name!r}, {self.part!r})"


class AxisKey(str):
    """The key of one token axis in a Trace's tokens and roles. An axis whose positions are the same in every
    call of the hooks that run over it is keyed by its name: AxisKey("dec") == "dec". An axis whose positions
    differ from call to call (each segment has its own) is keyed by its name and the call, by the one call-scope
    key that tells its calls apart: AxisKey("seg", segment=2), written "seg@segment=2".

    It is a str, so `trace.tokens["dec"]` finds the "dec" axis and the keys go into JSON as they are."""

    name: str
    call: tuple[str, int] | None  # (scope key, value), e.g. ("segment", 2); None: the same in every call

    def __new__(cls, name: str, **call: int) -> AxisKey:
        if len(call) > 1:
            raise ValueError(f"token axis {name!r} is keyed by one call-scope key, not by {sorted(call)}")
        scope = next(iter(call.items()), None)
        key = super().__new__(cls, name if scope is None else f"{name}@{scope[0]}={scope[1]}")
        key.name, key.call = name, scope
        return key

    def __getnewargs_ex__(self) -> tuple[tuple[str], dict[str, int]]:  # copies and pickles rebuild the key
        return (self.name,), dict([self.call] if self.call else [])
