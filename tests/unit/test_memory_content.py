"""Memory-content analyses (paper 004, section 5) on hand-built records whose
answers are worked out in the comments."""

import json
import math

import numpy as np
import pytest

from inference.analyses.memory_content import (
    MemoryRecord,
    _average_ranks,
    content_words_in_memory,
    diversity_by_length,
    keyword_in_memory,
    memory_content_summary,
    memory_pos_distribution,
    unique_token_histogram,
)
from inference.analyses.memory_pieces import memory_words, normalise_word, translation_word_count

DOG = "A dog runs in the park."  # YAKE top 3: park, dog, runs; content words: dog, runs, park
MAN = "The old man reads a newspaper."  # YAKE top 3: newspaper, man, reads; content words: old, man, reads, newspaper
WOMEN = "Two women cook dinner tonight."  # YAKE top 3: tonight, women, cook; content: two, women, cook, dinner, tonight


def record(translation: str, *pieces: str) -> MemoryRecord:
    return MemoryRecord(translation, list(pieces))


def test_pieces_normalise_to_lowercase_words_without_marker_or_punctuation():
    assert normalise_word("▁Dog,") == "dog"
    assert normalise_word("s") == "s"
    assert normalise_word("▁") == ""
    assert normalise_word("“.") == ""


def test_memory_words_are_pieces_and_joins_of_a_word_start_with_its_fragments():
    assert memory_words(["▁dog", "s", "▁park"]) == {"dog", "s", "dogs", "park"}
    # Special tokens and punctuation are no words, and a special token ends a join.
    assert memory_words(["▁dog", "<unk>", "s", "."]) == {"dog", "s"}


def test_translation_words_are_whitespace_tokens_with_a_letter_or_digit():
    assert translation_word_count(DOG) == 6
    assert translation_word_count("easy — but try 2") == 4


def test_histogram_counts_sentences_per_number_of_unique_pieces():
    records = [record(DOG, "▁a", "▁a", "▁b"), record(DOG), record(DOG, "▁x", "▁y", "▁z", "▁x")]  # unique 2, 0, 3
    histogram = unique_token_histogram(records)
    assert histogram.sentences_by_unique_count == [1, 0, 1, 1]
    assert histogram.mean_unique == pytest.approx(5 / 3)
    assert histogram.median_unique == 2
    assert histogram.mean_memory_length == pytest.approx(7 / 3)


def test_diversity_is_bucketed_by_translation_length():
    records = [
        record("one two three", "▁a", "▁a", "▁b"),  # 3 words: unique 2, diversity 2/3
        record("one two three four five six seven", "▁a"),  # 7 words: unique 1, diversity 1
        record("one two three four five six seven eight"),  # 8 words: empty memory, diversity 0
        record(" ".join(["w"] * 60), "▁a", "▁b", "▁c", "▁d"),  # 60 words: unique 4, diversity 1
    ]
    buckets = {b.label: b for b in diversity_by_length(records).buckets}
    assert list(buckets) == ["0–4", "5–9", "10–14", "15–19", "20–29", "30–49", "50+"]
    assert buckets["0–4"].n_sentences == 1 and buckets["0–4"].mean_diversity == pytest.approx(2 / 3)
    assert buckets["5–9"].n_sentences == 2
    assert buckets["5–9"].mean_unique == pytest.approx(0.5)
    assert buckets["5–9"].mean_memory_length == pytest.approx(0.5)
    assert buckets["5–9"].mean_diversity == pytest.approx(0.5)
    assert buckets["10–14"].n_sentences == 0 and buckets["10–14"].mean_unique is None
    assert (buckets["50+"].min_words, buckets["50+"].max_words, buckets["50+"].mean_unique) == (50, None, 4)


def test_length_unique_correlations_are_pearson_and_spearman():
    lengths, unique = [1, 2, 3, 10], [1, 2, 3, 4]
    records = [record(" ".join(["w"] * n), *[f"▁p{i}" for i in range(k)]) for n, k in zip(lengths, unique)]
    result = diversity_by_length(records)
    # Pearson: dx = -3 -2 -1 6, dy = -1.5 -0.5 0.5 1.5, sum dx*dy = 14, sqrt(50 * 5) = 15.81.
    assert result.pearson_length_unique == pytest.approx(14 / math.sqrt(250))
    assert result.spearman_length_unique == pytest.approx(1.0)  # same order


def test_correlation_is_none_when_unique_count_is_constant():
    records = [record("a b", "▁x"), record("a b c d", "▁y")]
    assert diversity_by_length(records).pearson_length_unique is None


def test_tied_values_share_their_mean_rank():
    assert _average_ranks(np.array([30.0, 10.0, 20.0, 20.0])).tolist() == [3.0, 0.0, 1.5, 1.5]


def test_a_keyword_written_to_memory_is_found():
    matched = keyword_in_memory([record(DOG, "▁dog", "▁the")]).matched  # park, dog, runs: only dog in memory
    assert (matched.n_sentences, matched.n_pairs) == (1, 3)
    assert matched.p_in_memory == pytest.approx(1 / 3)
    assert matched.share_sentences_with_any == 1.0


def test_a_keyword_spelled_by_a_word_start_and_its_fragment_is_found():
    assert keyword_in_memory([record(DOG, "▁do", "g")]).matched.p_in_memory == pytest.approx(1 / 3)
    assert keyword_in_memory([record(DOG, "▁do", "▁g")]).matched.p_in_memory == 0.0


def test_keywords_of_memory_about_its_own_sentence_beat_the_rotated_baseline():
    records = [record(DOG, "▁dog", "▁park"), record(MAN, "▁man"), record(WOMEN, "▁women", "▁the")]
    result = keyword_in_memory(records)
    # Matched: 2/3, 1/3, 1/3 of the keywords; rotated (dog memory vs MAN, ...): none.
    assert result.matched.p_in_memory == pytest.approx(4 / 9)
    assert result.matched.mean_sentence_p == pytest.approx(4 / 9)
    assert result.rotated_baseline.p_in_memory == 0.0
    assert result.rotated_baseline.n_pairs == 9


def test_rotated_baseline_pairs_each_memory_with_the_next_translation():
    # Memory 0 holds the keyword of translation 1, so only the rotation finds it.
    records = [record(DOG, "▁newspaper"), record(MAN, "▁tonight"), record(WOMEN, "▁park")]
    result = keyword_in_memory(records)
    assert result.matched.p_in_memory == 0.0
    assert result.rotated_baseline.p_in_memory == pytest.approx(3 / 9)


def test_a_single_sentence_has_no_rotated_baseline():
    assert keyword_in_memory([record(DOG, "▁dog")]).rotated_baseline is None


def test_sentences_without_keywords_carry_no_evidence():
    result = keyword_in_memory([record("It is what it is.", "▁it"), record(DOG, "▁dog")])
    assert result.matched.n_sentences == 1
    assert result.matched.mean_sentence_p == pytest.approx(1 / 3)


def test_content_words_of_the_translation_in_memory():
    records = [record(DOG, "▁dog", "▁the"), record(MAN, "▁man", "▁news", "paper")]
    result = content_words_in_memory(records)
    # DOG: dog of {dog, runs, park}; MAN: man and newspaper (▁news + paper) of {old, man, reads, newspaper}.
    assert result.matched.n_pairs == 7
    assert result.matched.p_in_memory == pytest.approx(3 / 7)
    assert result.matched.mean_sentence_p == pytest.approx((1 / 3 + 2 / 4) / 2)
    assert result.rotated_baseline.p_in_memory == 0.0
    # Word pieces: ▁dog ▁the | ▁man ▁news paper; own content words: dog, man, newspaper (via ▁news).
    assert result.n_memory_words == 5
    assert result.share_memory_words_own_content == pytest.approx(3 / 5)


def test_memory_pos_distribution_counts_each_piece_once_per_sentence():
    result = memory_pos_distribution([record(DOG, "▁dog", "▁the", "▁the", "ing", ".", "▁dog")])
    # dog NOUN and the DET from the translation; ing a fragment; "." punctuation.
    assert result.counts == {"NOUN": 1, "DET": 1, "SUBWORD": 1, "PUNCT": 1}
    assert result.fractions["NOUN"] == pytest.approx(0.25)
    assert sum(result.fractions.values()) == pytest.approx(1.0)
    assert result.subword_share == pytest.approx(0.25)
    assert result.punctuation_share == pytest.approx(0.25)
    assert result.tagged_in_context_share == 1.0


def test_memory_words_in_the_translation_take_their_tag_from_it():
    # "run" is a noun in this translation but a verb on its own.
    assert memory_pos_distribution([record("The morning run was long.", "▁run")]).counts == {"NOUN": 1}
    alone = memory_pos_distribution([record("Dogs bark.", "▁run")])
    assert alone.counts == {"VERB": 1}
    assert alone.tagged_in_context_share == 0.0


def test_special_and_bare_marker_pieces_have_their_own_categories():
    result = memory_pos_distribution([record(DOG, "<unk>", "", "▁", "▁dog")])
    assert result.counts == {"SPECIAL": 2, "SPACE": 1, "NOUN": 1}


def test_summary_bundles_everything_as_strict_json():
    records = [record(DOG, "▁dog", "s"), record(MAN, "▁man"), record(WOMEN)]
    summary = memory_content_summary(records)
    assert set(summary) == {
        "n_sentences",
        "unique_tokens",
        "diversity_by_length",
        "keywords",
        "content_words",
        "parts_of_speech",
    }
    assert summary["unique_tokens"]["sentences_by_unique_count"] == [1, 1, 1]
    assert summary["keywords"]["matched"]["p_in_memory"] == pytest.approx(2 / 9)
    json.dumps(summary, allow_nan=False)  # no inf/NaN: the app serves it as JSON


def test_an_empty_corpus_is_refused():
    with pytest.raises(ValueError):
        unique_token_histogram([])
