"""Retrieval items in token space: determinism, exact lengths, needle spans, boundaries, gold, score, gating."""

from __future__ import annotations

import re

import numpy as np
import pytest

from trustmass.deploy import tasks
from trustmass.deploy.tasks import TASKS, chat_parts, dense_valid, make_item, score, sentence_boundaries

PROSE = (
    "It is a truth universally acknowledged, that a single man in possession of a good fortune must be in want of a wife. "
    "However little known the feelings or views of such a man may be on his first entering a neighbourhood, this truth "
    'is so well fixed in the minds of the surrounding families! "My dear Mr. Bennet," said his lady to him one day, '
    '"have you heard that Netherfield Park is let at last?" Mr. Bennet replied that he had not. '
    "But it is, returned she; for Mrs. Long has just been here, and she told me all about it.\n\n"
    "Mr. Bennet made no answer. Do you not want to know who has taken it? cried his wife impatiently. "
    "You want to tell me, and I have no objection to hearing it. This was invitation enough.\n\n"
)


@pytest.fixture(scope="module", params=["byte-level", "metaspace"])
def tok(request):
    """A BPE trained on the fixture prose (GPT-2-style byte-level or SentencePiece-style metaspace), as a fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    if request.param == "byte-level":
        backend = Tokenizer(models.BPE())
        backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        backend.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=500, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        backend.train_from_iterator([PROSE * 4], trainer)
        return PreTrainedTokenizerFast(tokenizer_object=backend)
    backend = Tokenizer(models.BPE(unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Metaspace()
    backend.decoder = decoders.Metaspace()
    alphabet = "0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ abcdefghijklmnopqrstuvwxyz -:=?!()"
    backend.train_from_iterator([PROSE * 4 + alphabet], trainers.BpeTrainer(vocab_size=500, special_tokens=["<unk>"]))
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")


@pytest.fixture(scope="module")
def hay(tok):
    return np.asarray(tok.encode(PROSE * 30, add_special_tokens=False), dtype=np.int64)


def item(task, tok, hay, length=700, index=0, **kw):
    return make_item(task, length, index, haystack_ids=hay, tokenizer=tok, seed=kw.pop("seed", 7), **kw)


def text(tok, ids) -> str:
    return tok.decode(np.asarray(ids).tolist(), clean_up_tokenization_spaces=False)


@pytest.mark.parametrize("task", list(TASKS))
def test_deterministic_and_index_dependent(task, tok, hay):
    a, b = item(task, tok, hay), item(task, tok, hay)
    assert a == b and a.context_ids is not b.context_ids
    other = item(task, tok, hay, index=1)
    assert other != a and other.gold != a.gold and other.needle_texts != a.needle_texts
    assert item(task, tok, hay, seed=8) != a
    assert not a.context_ids.flags.writeable


@pytest.mark.parametrize("task", list(TASKS))
@pytest.mark.parametrize("length", [520, 701, 1500])
def test_exact_length_and_needle_spans(task, length, tok, hay):
    it = item(task, tok, hay, length=length)
    assert it.context_ids.dtype == np.int64 and it.question_ids.dtype == np.int64
    assert it.context_ids.size + it.question_ids.size == length and it.reserved == 0
    assert len(it.needles) == len(it.needle_texts) == TASKS[task][0]
    starts = sorted(s for s, _ in it.needles)
    bounds = set(sentence_boundaries(it.context_ids, tok).tolist())
    for (s, e), needle in zip(it.needles, it.needle_texts):
        assert text(tok, it.context_ids[s:e]).strip() == needle
        assert s in bounds  # the splice point is a sentence boundary of the final context
        assert re.search(r"[.!?][\"']?\s*$", text(tok, it.context_ids[:s])), text(tok, it.context_ids[s - 5 : s])
    assert all(e <= s2 for (_, e), s2 in zip(sorted(it.needles), starts[1:]))  # needles never overlap
    # outside the needles the context is the haystack's first tokens, in order
    keep = np.ones(it.context_ids.size, dtype=bool)
    for s, e in it.needles:
        keep[s:e] = False
    np.testing.assert_array_equal(it.context_ids[keep], hay[: keep.sum()])
    first_gold = 0 if task != "vt" else int(np.argmin(starts))
    assert it.depth == pytest.approx(it.needles[first_gold][0] / it.context_ids.size, abs=1e-6)


@pytest.mark.parametrize("task", list(TASKS))
def test_gold_in_context_and_question(task, tok, hay):
    it = item(task, tok, hay, index=3)
    body = text(tok, it.context_ids)
    assert it.gold and all(body.count(g) >= 1 for g in it.gold)
    assert text(tok, it.question_ids).strip() == f"{it.question} {it.answer_prefix}"
    assert score(" ".join(it.gold), list(it.gold)) == 100.0
    assert score(body, list(it.gold)) == 100.0


def test_multikey_distractors(tok, hay):
    it = item("niah_multikey", tok, hay, index=2)
    pattern = re.compile(r"magic numbers for (\S+) is: (\d{7})\.")
    pairs = [pattern.search(t).groups() for t in it.needle_texts]
    keys, values = zip(*pairs)
    assert len(set(keys)) == len(keys) == 4 and len(set(values)) == 4
    assert keys[0] in it.question and all(k not in it.question for k in keys[1:])
    assert it.gold == (values[0],)
    body = text(tok, it.context_ids)
    assert all(f"{k} is: {v}" in body for k, v in pairs)
    assert all(k.split("-")[0] in tasks.ADJECTIVES and k.split("-")[1] in tasks.NOUNS for k in keys)


def test_multivalue_one_key_all_values(tok, hay):
    it = item("niah_multivalue", tok, hay, index=4)
    found = re.findall(r"magic numbers for (\S+) is: (\d{7})\.", text(tok, it.context_ids))
    assert {k for k, _ in found} == {it.question.split(" for ")[1].split()[0]}
    assert sorted(v for _, v in found) == sorted(it.gold) and len(set(it.gold)) == 4
    assert score(it.gold[0], list(it.gold)) == 25.0


@pytest.mark.parametrize("index", range(5))
def test_vt_chain_resolvable(index, tok, hay):
    it = item("vt", tok, hay, index=index)
    body = text(tok, it.context_ids)
    value = re.search(r"assigned the value (\d{5})", it.question).group(1)
    bound: dict[str, str] = {}
    for name, rhs in re.findall(r"VAR ([A-Z]{5}) = ([A-Z]{5}|\d{5})\.", body):  # resolve reading forward
        bound[name] = rhs if rhs.isdigit() else bound[rhs]
    assert sorted(n for n, v in bound.items() if v == value) == sorted(it.gold)
    assert len(it.gold) == 5 and len(set(it.gold)) == 5


def test_depth_is_seeded_and_spread(tok, hay):
    depths = [item("niah_single", tok, hay, length=1500, index=i).depth for i in range(12)]
    assert all(0.0 < d < 1.0 for d in depths) and max(depths) - min(depths) > 0.3


def test_sentence_boundaries_rule(tok):
    ids = tok.encode('Mr. Darcy came in. She left! Did he? "Yes." Then', add_special_tokens=False)
    pieces = [text(tok, ids[:i]) for i in sentence_boundaries(ids, tok)]
    assert [p.split()[-1] for p in pieces] == ["in.", "left!", "he?", '"Yes."']  # "Mr." is no boundary


def test_score_examples():
    assert score("The numbers are 1234567 and 7654321.", ["1234567", "7654321"]) == 100.0
    assert score("only 1234567", ["1234567", "7654321"]) == 50.0
    assert score("they are: abcde, FGHIJ", ["ABCDE", "fghij", "KLMNO"]) == pytest.approx(200 / 3)
    assert score("nothing", ["1234567"]) == 0.0 and score("x 12 y", "12") == 100.0
    with pytest.raises(ValueError, match="gold is empty"):
        score("x", [])


def test_dense_valid():
    np.testing.assert_array_equal(dense_valid([100.0, 75.0, 0.0, 100]), [True, False, False, True])
    np.testing.assert_array_equal(dense_valid([100.0, 75.0, 0.0], threshold=50), [True, True, False])
    with pytest.raises(ValueError, match="NaN"):
        dense_valid([100.0, float("nan")])


def test_gating_and_bad_inputs(tok, hay):
    with pytest.raises(ValueError, match=r"length = 60 is below .* raise deploy\.lengths"):
        item("niah_multikey", tok, hay, length=60)
    with pytest.raises(ValueError, match=r"max_positions = 512\).*lower deploy\.lengths \(task .vt.\)"):
        item("vt", tok, hay, length=1024, max_positions=512)
    assert item("vt", tok, hay, length=512, max_positions=512).length == 512
    with pytest.raises(ValueError, match="task = 'qa'"):
        item("qa", tok, hay)
    with pytest.raises(ValueError, match="haystack_ids has 100 tokens"):
        item("niah_single", tok, hay[:100])
    with pytest.raises(ValueError, match="sentence boundaries"):
        item("niah_multikey", tok, np.asarray(tok.encode("a man " * 400, add_special_tokens=False)))
    with pytest.raises(ValueError, match="prompt_format = 'json'"):
        item("niah_single", tok, hay, prompt_format="json")
    with pytest.raises(ValueError, match="no chat template"):
        item("niah_single", tok, hay, prompt_format="chat")


def test_chat_format_reserves_template_tokens(tok, hay):
    chat = tok.__class__(tokenizer_object=tok.backend_tokenizer)
    chat.chat_template = "{% for m in messages %}<user> {{ m['content'] }} </user>{% endfor %} <bot>"
    it = item("niah_single", chat, hay, length=600, prompt_format="chat")
    head, tail = chat_parts(chat, "chat")
    assert it.reserved == len(head) + len(tail) > 0 and it.context_ids.size + it.question_ids.size == 600
    assert it.prompt_format == "chat" and it != item("niah_single", tok, hay, length=600)
    # kvpress's split: the template's head opens the context; its tail closes the question, before the answer prefix
    assert it.context_ids[: len(head)].tolist() == head
    ((s, e),) = it.needles
    assert text(chat, it.context_ids[s:e]).strip() == it.needle_texts[0]
    q, prefix = it.question_ids.tolist(), chat.encode(it.answer_prefix, add_special_tokens=False)
    assert q[len(q) - len(prefix) - len(tail) :] == tail + prefix


def test_needle_the_tokenizer_cannot_write():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE(unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Metaspace()
    backend.train_from_iterator([PROSE], trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>"]))
    no_digits = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")
    ids = np.asarray(no_digits.encode(PROSE * 30, add_special_tokens=False))
    with pytest.raises(ValueError, match="does not round-trip the needle"):
        make_item("niah_single", 700, 0, haystack_ids=ids, tokenizer=no_digits, seed=0)
