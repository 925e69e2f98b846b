"""Hook names, built and read in one place.

A hook point's name is its module path (`name_hook_points`); what it holds
is its last part: `pattern` (attention probabilities), `mask`, `z` (per-head
outputs), `keys` and `out` of a feed-forward layer, `logits`. Everything
that asks for hooks by name builds the name here, and every attention
pattern's (stack, layer) is read from its name here."""

from __future__ import annotations

from collections.abc import Iterable

from inference.core.bounds import MAX_NAME_CHARS

_NAME = rf"[A-Za-z0-9_.]{{1,{MAX_NAME_CHARS}}}"
HOOK_NAME = rf"^{_NAME}$"  # what a hook or module name a client sends may look like
LOGITS = "logits"
DECODER_SELF_ATTENTION = "decoder.self_attn"  # the stack a decoder-only reading of memory attends in (working memory)
PATTERN = "pattern"
EVERY_PATTERN = f"*.{PATTERN}"  # every attention pattern of a model
MASK = "mask"
EVERY_MASK = f"*.{MASK}"  # every attention mask (where memory may be read)

# The working-memory decoder's decisions, one call per generated element (paper 004's family).
WORKING_MEMORY_CHOICE = "decoder.wm.choice"
WORKING_MEMORY_WRITTEN = "decoder.wm.written"
# The memory a segment-recurrent model writes at the end of every segment (paper 002's RMT).
MEMORY_WRITE = "memory.write"
# What a model with recurrent steps promises the State page (docs/architecture.md): the state before the first step,
# every layer's state and gates at every step, and the output tape a decoder reads.
STATE_INPUT = "input"


def state(stack: str, layer: int) -> str:
    return f"{stack}.layers.{layer}.state"


def gate(stack: str, layer: int, which: str) -> str:
    """A CGRU layer's update or reset gate."""
    return f"{stack}.layers.{layer}.{which}_gate"


def tape(stack: str) -> str:
    return f"{stack}.tape"


def kind_of(name: str) -> str:
    """What a hook holds, from its name's last part: "pattern", "mask", "z", "keys", "tape", ..."""
    return name.rpartition(".")[2]


def attention_mask(attention: str) -> str:
    """The mask [batch head query key] of an attention module, True where the query may attend the key."""
    return f"{attention}.{MASK}"


def head_outputs(attention: str) -> str:
    """The per-head outputs [batch position head d_head] of an attention module, e.g. "decoder.layers.1.cross_attn"."""
    return f"{attention}.z"


def ff_keys(ff: str) -> str:
    """The key coefficients [batch position ff_key] of a feed-forward module, e.g. "layers.3.ff"."""
    return f"{ff}.keys"


def ff_output(ff: str) -> str:
    """What a feed-forward module adds to the residual stream."""
    return f"{ff}.out"


def stack_of(name: str) -> tuple[str, int] | None:
    """An attention pattern's hook name -> (stack, layer); None for other hooks.
    'encoder.layers.2.mem.attn.pattern' -> ('encoder.mem.attn', 2); a pattern
    outside a `layers` list is a stack of one layer: 'block.attn.pattern' -> ('block.attn', 0)."""
    parts = name.split(".")
    if parts[-1] != PATTERN:
        return None
    for j in range(1, len(parts) - 1):
        if parts[j - 1] == "layers" and parts[j].isdigit():
            return ".".join(parts[: j - 1] + parts[j + 1 : -1]), int(parts[j])
    return ".".join(parts[:-1]), 0


def pattern_hook_name(names: Iterable[str], stack: str, layer: int) -> str:
    """The pattern hook among `names` of a stack's layer; KeyError when there is none."""
    for name in names:
        if stack_of(name) == (stack, layer):
            return name
    raise KeyError(f"no attention pattern of {stack} layer {layer}")
