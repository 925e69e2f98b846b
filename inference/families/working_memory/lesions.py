"""The working-memory family's own lesion kinds (paper 004's lesions): the memory masked from the target tokens,
and a memory forced on the decoder. Registered with the family (`Family.lesion_kinds`); the hooks that apply them
are the family's (`WorkingMemoryFamily.intervention_hooks`), and what the analyses and pages read of them is the
core's `ForcesMemory` and `MasksMemory` (inference/core/memory_decisions.py)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from inference.core.bounds import MAX_LISTED
from inference.core.interventions import Interventions, MemorySize
from inference.core.lesion_kinds import LesionKind, plural


class MaskMemory(LesionKind):
    """Target-type queries may not attend memory-type keys in the decoder's self-attention: the memory is still
    written, but the translation cannot read it."""

    kind: Literal["mask_memory"] = "mask_memory"
    title: ClassVar[str] = "Mask the memory"
    masks_memory: ClassVar[bool] = True

    def words(self, trained_memory: int) -> str:
        return "memory masked (target tokens may not attend to it)"


class ForceMemory(LesionKind):
    """These tokens are the whole memory, written first and in order, whatever the type head would choose."""

    kind: Literal["force_memory"] = "force_memory"
    tokens: tuple[Annotated[int, Field(ge=0)], ...] = Field(
        min_length=1,
        max_length=MAX_LISTED,
        description="the memory's token ids, in order (a page's form takes words); at most the memory size",
        json_schema_extra={"control": "words"},
    )
    title: ClassVar[str] = "Force the memory"

    @property
    def forced_tokens(self) -> tuple[int, ...]:
        return self.tokens

    def words(self, trained_memory: int) -> str:
        return f"memory forced to {plural(len(self.tokens), 'given token')}"


WORKING_MEMORY_LESIONS = (MaskMemory, ForceMemory)


def memory_lesions() -> dict[str, Interventions]:
    """The lesions the corpus studies measure, by the name they report (inference/runs/memory_corpus.py,
    training/studies/memory_examples.py and memory_content.py, training/evaluation; reported by
    training/report/working_memory.py). Built when asked: the kinds are registered with the family, after this
    module is imported."""
    return {"masked": Interventions.of(MaskMemory()), "no_memory": Interventions.of(MemorySize(size=0))}
