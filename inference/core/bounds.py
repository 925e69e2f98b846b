"""Every bound on what one request may ask for, in one place: the JSON API's
schemas, the pages' forms, the CLI and the interventions all read these, so
a number a client may send has one limit wherever it enters. The model's
own sizes (layers, heads, slots, keys) are checked after these, when the
run is built."""

from __future__ import annotations

MAX_INDEX = 8192  # any index a request names: layer, head, position, segment, step, FF key (the widest FF has 2,048)
MAX_MEMORY_SIZE = 1024  # memory a lesion may ask for (the model's own max_memory_size is checked after)
MAX_NAME_CHARS = 100  # a model's, stack's, hook's or module's name
MAX_PICKED_KEYS = 200  # FF keys picked by number on one request
MAX_LISTED = 1024  # items of one list: interventions in a request, slots or forced tokens in one, numbers in a field
MAX_FACTOR = 1000.0  # the largest |factor| of a scale, and of a noise's size
MAX_SEED = 2**31 - 1  # sampling and noise seeds
MAX_COMPARED_MODELS = 16  # models on one Compare request: every shipped translator (the page shows each row as it ends)
MAX_BEAM_SIZE = 8
MAX_LENGTH_PENALTY = 2.0
MAX_CALL_INDEX_KEYS = 4  # keys of one call index, e.g. {"segment": 2}
MAX_PAGE_SIZE = 200  # items of one page of a listing (FF key cards)
MAX_TOP = 50  # the most top-k items asked per position or key (keys, tokens, trigger examples)
