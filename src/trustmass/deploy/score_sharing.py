"""Which recorded kvpress scores are the same computation, so that one prefill computes each once.

The runner records one press per (method, budget) on a shared prefill (``contourkv.record_all``): kvpress
builds a press per ``compression_ratio``.  Many of those presses compute the very same score: SnapKV's
window score serves ``snapkv``, ``adakv`` and ``pyramidkv`` (PyramidKV inherits ``SnapKVPress.score`` and
differs only in its per-layer budgets, applied after scoring), its 32-query window serves ``snapkv_w32`` and
both ContourKV modes, and most scores never read ``compression_ratio`` (it only sets how many keys
``ScorerPress.compress`` keeps).  :func:`score_identity` names that computation; presses with one identity
get one ``score`` call per layer, on the same layer inputs, so the shared tensor is bitwise the one each
would have computed (``tests/deploy/test_score_sharing.py`` checks each declaration below on a model).

Declared, not inferred: a press class shares only through :data:`SCORE_OF` (whose ``score`` it runs, and
which of that class's fields it reads) and :data:`RATIO_FREE` (scores that ignore the ratio).  Every other
press keeps a score of its own: StreamingLLM and H2O size their protected windows from the ratio,
CriticalKV selects with it, Compactor blends by it and draws a random sketch.
"""

from __future__ import annotations

from dataclasses import fields

from kvpress import ExpectedAttentionPress, KeyDiffPress, KnormPress, PyramidKVPress, SnapKVPress, TOVAPress

__all__ = ["RATIO_FREE", "SCORE_OF", "score_identity", "sharing_groups"]

#: press class -> the class whose ``score`` (and whose dataclass fields, the score's inputs) it runs
SCORE_OF: dict[type, type] = {
    SnapKVPress: SnapKVPress,
    PyramidKVPress: SnapKVPress,  # PyramidKV's own field (beta) and budgets act after scoring
    TOVAPress: TOVAPress,
    KnormPress: KnormPress,
    KeyDiffPress: KeyDiffPress,
    ExpectedAttentionPress: ExpectedAttentionPress,
}

#: scoring classes whose ``score`` never reads ``compression_ratio``
RATIO_FREE: frozenset[type] = frozenset(SCORE_OF.values())


def score_identity(press) -> tuple | None:
    """What ``press.score`` computes, as a hashable key; None for a press that shares with no other."""
    scorer = SCORE_OF.get(type(press))
    if scorer is None:
        return None
    inputs = tuple(
        (f.name, getattr(press, f.name))
        for f in fields(scorer)
        if not (f.name == "compression_ratio" and scorer in RATIO_FREE)
    )
    return (scorer.__module__, scorer.__qualname__, inputs)


def sharing_groups(presses: dict) -> dict[str, str]:
    """name -> the name whose score it reuses (the first press of its identity, in ``presses``' order)."""
    first: dict[tuple, str] = {}
    owner = {}
    for name, press in presses.items():
        identity = score_identity(press)
        owner[name] = name if identity is None else first.setdefault(identity, name)
    return owner
