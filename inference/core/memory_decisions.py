"""The record a working-memory decoder writes at its decision hook (`decoder.wm.choice`, WORKING_MEMORY_CHOICE in
hook_names): its columns and type codes, which the family writes and the analyses read; and what the analyses and
the pages read of its lesions (`ForcesMemory`, `MasksMemory`), which the family's own kinds provide."""

from __future__ import annotations

from typing import ClassVar, Protocol, runtime_checkable

MEMORY_TYPE, TARGET_TYPE = 0, 1

# Columns of the `decoder.wm.choice` record, one row per example per step.
# Integers are stored exactly in float32 (token ids < 2**24).
CHOICE_COLUMNS = (
    "p_memory",  # type-head probability of "memory" for the next element
    "p_target",  # type-head probability of "target"
    "type",  # the chosen type after the memory cap: 0 memory, 1 target
    "token",  # the chosen token id (pad for a finished example)
    "nucleus_size",  # tokens in the top-p nucleus the memory token was sampled from; 0 for a target token
    "overridden",  # 1 when the type head asked for memory but the memory was full, so the type became target
    "active",  # 0 once the example has finished (its row then holds pad, type target)
)
CHOICE_COLUMN = {name: i for i, name in enumerate(CHOICE_COLUMNS)}


@runtime_checkable
class ForcesMemory(Protocol):
    """A lesion that writes the first elements of the stream itself, as memory: those decisions are forced."""

    @property
    def forced_tokens(self) -> tuple[int, ...]: ...  # the token ids written, in order


@runtime_checkable
class MasksMemory(Protocol):
    """A lesion after which target elements may not attend memory elements: their attention on memory is 0."""

    masks_memory: ClassVar[bool]
