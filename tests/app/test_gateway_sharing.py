"""How the model gateway shares one model between requests: cached views never wait
for the model lock, a request whose client has gone gives up its turn, and
recent traces stay within their byte budget."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from app.middleware.client_gone import _GONE, ClientGone
from app.schemas.validation import InputError
from app.services.gateway import ModelGateway, RunLimits, trace_bytes
from app.services.model_thread import MODEL_THREAD, claim_cpu_threads, splits_over_cpu_threads
from inference.core.checkpoint import CheckpointRegistry
from inference.core.hook_names import EVERY_PATTERN
from inference.core.interventions import Interventions
from inference.core.refusals import InputRefused

MODEL = "tiny_memtransformer"
TEXTS = ["ein Hund spielt im Park", "zwei Frauen lesen", "Kinder spielen im Wasser", "eine Frau liest ein Buch"]


LIMITS = RunLimits(max_text_chars=300, max_source_tokens=40, max_new_tokens=12)


@pytest.fixture
def gateway(checkpoint_dir) -> ModelGateway:
    return ModelGateway(CheckpointRegistry(checkpoint_dir, "cpu"), LIMITS)


@pytest.fixture
def model(gateway):
    return gateway.model(MODEL)


def test_a_cached_view_is_served_while_the_model_is_busy(gateway, model):
    first = gateway.trace(model, TEXTS[0], Interventions(), names=[EVERY_PATTERN])
    served = []
    with gateway.lock:  # a long run holds the model
        reader = threading.Thread(
            target=lambda: served.append(gateway.trace(model, TEXTS[0], Interventions(), names=[EVERY_PATTERN]))
        )
        reader.start()
        reader.join(timeout=60)
        assert served and served[0] is first, "the cached trace waited for the model lock"


def test_a_request_whose_client_has_gone_gives_up_its_turn(gateway, model):
    gone = threading.Event()
    outcome = []

    def waiting_request():
        _GONE.set(gone)
        try:
            gateway.trace(model, TEXTS[1], Interventions(), names=None)
            outcome.append("ran")
        except ClientGone:
            outcome.append("gave up")

    with gateway.lock:
        request = threading.Thread(target=waiting_request)
        request.start()
        gone.set()  # the client disconnects while the request waits for the model
        request.join(timeout=60)
    assert outcome == ["gave up"]
    assert gateway.recent_bytes == 0  # nothing ran for it


def test_recent_traces_stay_within_their_byte_budget(gateway, model):
    one = trace_bytes(gateway.trace(model, TEXTS[0], Interventions(), names=[EVERY_PATTERN]))
    budget = int(2.5 * one)
    small = ModelGateway(gateway.registry, LIMITS, recent_trace_bytes=budget)
    for text in TEXTS:
        small.trace(model, text, Interventions(), names=[EVERY_PATTERN])
        assert 0 < small.recent_bytes <= budget
    assert len(small._recent) < len(TEXTS)  # the oldest were dropped
    newest = small.trace(model, TEXTS[-1], Interventions(), names=[EVERY_PATTERN])
    assert small.trace(model, TEXTS[-1], Interventions(), names=[EVERY_PATTERN]) is newest


def test_a_run_goes_to_a_thread_of_one_cpu_thread_and_exclusive_work_to_the_model_thread(gateway, model):
    seen: list[str] = []
    hook = model.model.register_forward_hook(lambda *_: seen.append(threading.current_thread().name))
    claim_cpu_threads()  # as the server does at start-up: every thread that runs requests computes on one
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="request") as request_thread:
            request_thread.submit(gateway.trace, model, TEXTS[1], Interventions(), names=[EVERY_PATTERN]).result()
    finally:
        hook.remove()
    # the test model's largest weight is far under torch's grain: the request's own thread, on one CPU thread, runs it
    assert not splits_over_cpu_threads(model.model)
    assert seen and {name.split("_")[0] for name in seen} == {"request"}
    assert gateway.exclusive(lambda: threading.current_thread().name).split("_")[0] == MODEL_THREAD
    with pytest.raises(InputError, match="position 9"):  # a run's refusal of its input: a 400 in the app
        gateway.exclusive(lambda: (_ for _ in ()).throw(InputRefused("position 9 is beyond the output")))
    with pytest.raises(ValueError, match="a bug") as raised:  # anything else is a bug: not taken for the input
        gateway.exclusive(lambda: (_ for _ in ()).throw(ValueError("a bug")))
    assert not isinstance(raised.value, InputError)
