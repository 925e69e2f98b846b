"""Where a newcomer starts: links that open a page on a ready example of what MemLens is for. Each names the
checkpoint it shows; one whose checkpoint is not in the served folder is left out."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from app.services.gateway import ModelGateway
from app.services.gating import offered
from app.services.pages import EXPLORE, SEGMENTS, STATE, Page
from app.services.state import examples


@dataclass(frozen=True)
class StartingPoint:
    title: str  # what the reader will see
    explains: str  # why it matters, in one sentence
    page: Page
    model: str
    query: tuple[tuple[str, str], ...] = ()  # page controls set in the address, e.g. (("lesion", "memory_size"),)

    @property
    def href(self) -> str:
        return f"{self.page.path}?{urlencode((('model', self.model), *self.query))}"


STARTING_POINTS = (
    StartingPoint(
        "Memory read and written in the attention blocks",
        "The Memory Transformer's encoder: its memory slots write the sentence (write block), the sentence reads "
        "them (read block); pick a layer and head, or knock slots out.",
        EXPLORE,
        "memtransformer_10",
    ),
    StartingPoint(
        "The translation breaking as memory is knocked out",
        "The same model with all 10 memory slots removed falls into a loop; move the memory-size slider back to see "
        "the translation recover.",
        EXPLORE,
        "memtransformer_10",
        (("text", "Ein Junge springt."), ("lesion", "memory_size"), ("memory_size.size", "0")),
    ),
    StartingPoint(
        "A memory slot's content probed",
        "The Recurrent Memory Transformer copies digits through its memory: which input digit each memory slot holds "
        "after every segment, read by a linear probe, beside what each slot's write attends to.",
        SEGMENTS,
        "rmt_copy",
    ),
    StartingPoint(
        "The Neural GPU carrying a bit",
        "Binary addition, least significant bit first, of 1111111 and 1: play the steps and watch the carry "
        "travel along the state.",
        STATE,
        "neural_gpu_addition",
        (("text", examples("addition", "")[0][1]),),  # the carry through all but one bit
    ),
)


def starting_points(gateway: ModelGateway) -> list[StartingPoint]:
    """The starting points whose checkpoint is served and shown on their page."""
    return [point for point in STARTING_POINTS if point.model in offered(gateway, point.page)]
