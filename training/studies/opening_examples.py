"""The input each page opens a model on, chosen by measuring on the model's validation data.

A page that names no input opens on this example (app/services/examples.py), so a newcomer's first look shows
the model doing its job. Every model the app serves from the checkpoints folder is run as its pages run it
(alone, greedy, seed 0, the pages' step budgets) on candidates from the validation split it was chosen on, and
judged by the measure its pages show:

- a translator: the first CANDIDATES validation pairs of MIN_WORDS to MAX_WORDS words; the one whose translation
  has the highest sentence chrF against its reference (a working-memory translator: among its measured
  memory-writing sentences, app/data/memory_examples.json, so that the example writes memory);
- a task model: its task's validation samples; a Neural GPU's first whose output equals the answer; a segment
  model's (it predicts each answer position, teacher-forced) the one with the most answer positions predicted;
- a language model that continues text: prompts from validation sentences (all but the last PROMPT_TAIL of the
  words); the first whose greedy next token starts the sentence's own next word and whose continuation of
  CONTINUATION_TOKENS tokens neither repeats a token three times in a row nor any three tokens twice;
- a segment language model (it predicts each position of the text it reads): validation passages of PASSAGE_WORDS
  words; the one with the highest next-token accuracy.

Written to app/data/opening_examples.json with the score of each, beside the models of other folders measured
before (a models folder: `--checkpoints models`, a Hugging Face causal LM measured on the English Wikipedia
validation articles):

    python -m training.studies.opening_examples [--checkpoints checkpoints] [--data-dir DIR]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from inference.analyses.quality import sentence_chrf
from inference.analyses.segments import next_token_hits
from inference.core.capabilities import Capability
from inference.core.checkpoint import load_checkpoint, model_folders
from inference.core.decoding import CONTINUATION_TOKENS
from inference.core.family import LoadedModel, capabilities_of
from inference.core.measured_examples import memory_examples
from inference.core.model_results import needed
from inference.core.places import OPENING_EXAMPLES_FILE, resolve_data_dir
from inference.core.trace import Role
from inference.core.tracing import run_with_trace
from training.data.corpora import corpus_of
from training.data.lm_corpora import read_enwiki
from training.loop.neural_gpu_task_run import VALIDATION_SIZE as NEURAL_GPU_VALIDATION
from training.loop.segment_task_run import VALIDATION_SIZE as SEGMENT_VALIDATION
from training.loop.segment_task_run import base_lookup, example_text
from training.studies.example_study import study_arguments, write_study
from training.tasks import neural_gpu_tasks, rmt_tasks

SEED = 0  # the pages' default seed
CANDIDATES = 300  # validation sentences or prompts measured per model, at most
MIN_WORDS, MAX_WORDS = 6, 14  # a sentence that reads at a glance
PROMPT_TAIL = 4  # words of a validation sentence left for a language model to continue towards
PASSAGE_WORDS = 90  # a segment language model's passage: a few segments of its text
MAX_REPEATS = 3  # a token this many times in a row, or any three tokens twice, is a loop


@dataclass
class Opening:
    text: str  # what the page opens on
    expected: str  # the reference translation, the task's answer, the sentence's true next words
    output: str  # what the model gave, as the page shows it
    measure: str  # in words
    score: float
    candidates: int  # measured before it was chosen


def loops(ids: list[int]) -> bool:
    """A token repeated MAX_REPEATS times in a row, or any three consecutive tokens occurring twice."""
    runs = any(len(set(ids[i : i + MAX_REPEATS])) == 1 for i in range(len(ids) - MAX_REPEATS + 1))
    triples = [tuple(ids[i : i + 3]) for i in range(len(ids) - 2)]
    return runs or len(set(triples)) < len(triples)


def translator_opening(loaded: LoadedModel, data_dir: Path) -> Opening:
    corpus = corpus_of(loaded.name, loaded.record.corpus)
    if Capability.WORKING_MEMORY in capabilities_of(loaded.config):
        _, measured = memory_examples(loaded.name)
        pairs = [(example["source"], example["reference"]) for example in measured]
        where = "its measured memory-writing validation sentences"
    else:
        pairs = [(s, r) for s, r in corpus.read(data_dir)["val"] if MIN_WORDS <= len(s.split()) <= MAX_WORDS]
        pairs = pairs[:CANDIDATES]
        where = f"the val split of {corpus.name}, {MIN_WORDS} to {MAX_WORDS} words"
    scored = []
    for source, reference in pairs:
        output = run_with_trace(loaded, source, names=[], seed=SEED).outputs[0]
        scored.append(Opening(source, reference, output, "", sentence_chrf(output, reference), len(pairs)))
    best = max(scored, key=lambda opening: (opening.score, -len(opening.text)))
    best.measure = f"sentence chrF against the reference, the highest of {len(pairs)} from {where}"
    return best


def first_right(candidates: Iterator[tuple[str, str]], answer: Callable[[str, str], tuple[str, bool]]) -> Opening:
    """The first (text, expected) candidate whose answer(text, expected) is (output, right)."""
    for measured, (text, expected) in enumerate(candidates, start=1):
        output, right = answer(text, expected)
        if right:
            return Opening(text, expected, output, "", 1.0, measured)
    raise LookupError("no candidate was answered right")


def neural_gpu_opening(loaded: LoadedModel) -> Opening:
    """The answer decoded: the first validation sample answered right."""
    task = neural_gpu_tasks.task_of(loaded.name, loaded.record.task)
    settings = needed(loaded.metrics.training, "task run's settings")
    samples = neural_gpu_tasks.task_split(task, "val", settings["max_length"], NEURAL_GPU_VALIDATION)

    def decoded(text: str, expected: str) -> tuple[str, bool]:
        output = run_with_trace(loaded, text, names=[], seed=SEED).outputs[0]
        return output, output == expected

    opening = first_right(((s.source, s.target) for s in samples), decoded)
    opening.measure = f"the output equal to the task's answer; the first of {task}'s val samples that is"
    return opening


def segment_task_opening(loaded: LoadedModel) -> Opening:
    """Each answer position predicted, teacher-forced: the validation sample with the most right."""
    task = rmt_tasks.task_of(loaded.name, loaded.record.task)
    samples = rmt_tasks.task_split(task, "val", SEGMENT_VALIDATION)
    tokenizer = loaded.tokenizer
    own = tokenizer.encode(rmt_tasks.text(samples[0].stream)) == list(samples[0].stream)  # the task's tokenizer
    lookup = None if own else base_lookup(tokenizer, {i for s in samples for i in s.stream}, "cpu")
    scored = []
    for sample in samples:
        text = example_text(sample, tokenizer, lookup)
        hits = next_token_hits(tokenizer.encode(text), predictions(loaded, text), tokenizer.bos_id)
        right = sum(hit is True for hit in hits.hits)
        output = f"{right} of {len(hits.hits) - hits.scored_from} answer tokens predicted"
        scored.append(Opening(text, "every answer token predicted", output, "", hits.accuracy, len(samples)))
    best = max(scored, key=lambda opening: opening.score)  # the first of the best
    best.measure = f"the answer tokens predicted, the most of {task}'s {len(samples)} val samples"
    return best


def predictions(loaded: LoadedModel, text: str) -> list[int]:
    """The model's next token after every position of `text`, teacher-forced, as the Segments page runs it."""
    return run_with_trace(loaded, text, names=[], seed=SEED).output_ids[0]


def validation_sentences(loaded: LoadedModel, data_dir: Path) -> list[str]:
    """The held-out English Wikipedia articles: the validation split of our language models, and the English text
    a researcher's own model (a folder of another format, which names no corpus) is measured on."""
    corpus = loaded.record.corpus or ("enwiki" if loaded.record.format else None)
    if corpus != "enwiki":
        raise LookupError(f"no validation text known for corpus {corpus!r}")
    return [sentence for document in read_enwiki(data_dir)["val"] for sentence in document]


def continuation_opening(loaded: LoadedModel, data_dir: Path) -> Opening:
    sentences = [s for s in validation_sentences(loaded, data_dir) if MIN_WORDS + PROMPT_TAIL <= len(s.split()) <= 24]

    def continued(prompt: str, rest: str) -> tuple[str, bool]:
        trace = run_with_trace(loaded, prompt, names=[], max_new_tokens=CONTINUATION_TOKENS, seed=SEED)
        roles = next(iter(trace.roles.values()))[0]
        generated = trace.output_ids[0][-sum(role is Role.GENERATED for role in roles) :]
        first = loaded.tokenizer.decode(generated[:1]).strip()
        return trace.outputs[0], bool(first) and rest.startswith(first) and not loops(generated)

    prompts = ((" ".join(s.split()[:-PROMPT_TAIL]), " ".join(s.split()[-PROMPT_TAIL:])) for s in sentences)
    opening = first_right((pair for _, pair in zip(range(CANDIDATES), prompts)), continued)
    opening.measure = (
        f"the first validation prompt whose next token starts the sentence's next word and whose "
        f"{CONTINUATION_TOKENS}-token continuation does not loop"
    )
    return opening


def passage_opening(loaded: LoadedModel, data_dir: Path) -> Opening:
    documents = read_enwiki(data_dir)["val"]
    passages = []
    for document in documents:
        words = " ".join(document).split()
        if len(words) >= PASSAGE_WORDS:
            passages.append(" ".join(words[:PASSAGE_WORDS]))
    tokenizer, scored = loaded.tokenizer, []
    for passage in passages[:CANDIDATES]:
        hits = next_token_hits(tokenizer.encode(passage), predictions(loaded, passage), tokenizer.bos_id)
        scored.append(Opening(passage, "the passage's next tokens", "", "", hits.accuracy, len(passages[:CANDIDATES])))
    best = max(scored, key=lambda opening: opening.score)
    best.output = f"{best.score:.0%} of next tokens predicted"
    best.measure = f"next-token accuracy, the highest of {best.candidates} validation passages of {PASSAGE_WORDS} words"
    return best


def opening(loaded: LoadedModel, data_dir: Path) -> Opening:
    capabilities = capabilities_of(loaded.config)
    if loaded.record.task:
        return segment_task_opening(loaded) if Capability.SEGMENTS in capabilities else neural_gpu_opening(loaded)
    if Capability.TRANSLATES in capabilities:
        return translator_opening(loaded, data_dir)
    if Capability.GENERATES_TEXT in capabilities:
        return continuation_opening(loaded, data_dir)
    return passage_opening(loaded, data_dir)


def write_openings(checkpoints: Path, data_dir: Path, out: Path = OPENING_EXAMPLES_FILE) -> dict:
    """Every model of `checkpoints` measured, written beside those of other folders already in `out` (a models
    folder's SmolLM2 beside the shipped checkpoints)."""
    models = json.loads(out.read_text(encoding="utf-8"))["models"] if out.exists() else {}
    for folder in model_folders(checkpoints):
        loaded = load_checkpoint(folder, device="cpu")  # the server's numerics: pages run on the CPU by default
        try:
            models[folder.name] = asdict(opening(loaded, data_dir))
        except LookupError as error:
            print(f"{folder.name}: none chosen ({error})")
            continue
        print(f"{folder.name}: {models[folder.name]['score']:.2f} {models[folder.name]['text'][:60]!r}")
    written = {"seed": SEED, "how": __doc__.split("\n\n")[1].replace("\n", " "), "models": models}
    return write_study(out, written)


def main(argv: list[str] | None = None) -> None:
    args = study_arguments("opening_examples", __doc__, OPENING_EXAMPLES_FILE, argv)
    with torch.no_grad():
        write_openings(args.checkpoints, resolve_data_dir(args.data_dir), args.out)


if __name__ == "__main__":
    main()
