"""Sanity checks for every claim (Adebayo et al. 2018, "Sanity checks for saliency maps", NeurIPS): the same
study, by the same code, on two controls, and what each claim's answers there say about it.

The controls (each a claims report of its own, ``results/controls/<arm>/claims.json``, built by
:func:`trustmass.report.claims.report.build` with the one decision rule):

* ``randomised_weights``: a twin of each model with every weight matrix re-drawn with the trained tensor's own
  mean and standard deviation (norm weights kept): the architecture and the scale of its activations without
  anything learned;
* ``shuffled_text``: the trained models on each document's tokens permuted within the document: the trained
  weights without language.

:func:`attach_controls` adds to every claim of the trained report its reading on each arm (the arm's answer per
axis and its claim-level answer, with the reason) and a verdict.  **Per axis** (direction, size: the two answers
the report gives every claim, split as its ``summary`` splits them), from the trained claim's answer on that
axis:

* *by construction* -> **structural**: the statement cannot fail on any data, so it holds for any weights and
  any text;
* *contradicted* -> **contradicted** (the controls are read, and say nothing more);
* *agrees* -> **structural** when the claim *agrees* on the same axis on at least one control (it is not
  attributable to training, or not to language), else **specific** -- provided every control produced it:
  where one did not (not run, or its stage switched off there), no verdict (*a control did not produce it*);
* anything else -> **no verdict**, the trained answer as the reason: *partial* (some values agree, the rest
  cannot answer: what agrees is not the claim, so neither is its specificity established), *uninformative*,
  *not produced*, *not comparable*.

A control **agrees** only as the trained models do: the one decision rule on every cell, the one aggregation
(:func:`trustmass.report.claims.axes.combine`) over cells, populations and values.  So a control that is
*partial* (some values agree, the rest cannot answer), *contradicted*, *uninformative*, *not produced* or not
run does not make a claim structural; its reading is recorded beside the verdict (a *specific* claim that a
control contradicts is the strong case, and is listed apart).

**The claim's verdict** follows from its axes by the same aggregation: the trained claim's answer is the
combination of its axes' answers (an axis *by construction* or *not comparable* set apart, as a value is).  It
is *contradicted* when that answer is; *structural* when it is *by construction* (every axis is) or when it
*agrees* and any of its agreeing axes is structural; *specific* when it agrees and every agreeing axis is
specific (no verdict when an agreeing axis has none because a control did not produce it); otherwise no
verdict, with that answer as the reason (*partial*: e.g. the direction agrees and the size cannot answer --
the axes' own verdicts still stand).  A claim that states no number has no verdict
(*qualitative*).

An arm absent from ``arms`` (controls off, or the arm not run) reads *not run* on every claim: it makes nothing
structural, and nothing specific either.  With no arms at all the report is returned as it was, plus ``controls: null``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from trustmass.report.claims.axes import (
    AGREES,
    ANSWERED,
    BY_CONSTRUCTION,
    CONTRADICTED,
    NO_ANSWER_ORDER,
    NOT_PRODUCED,
    PARTIAL,
    combine,
)
from trustmass.report.claims.report import QUALITATIVE

__all__ = [
    "CONTROL_ARMS",
    "CONTROLS_NOT_RUN",
    "NOT_RUN",
    "NO_VERDICT",
    "REGIME_COLUMNS",
    "SPECIFIC",
    "STRUCTURAL",
    "STRUCTURAL_MEANS",
    "TRAINED",
    "VERDICTS",
    "attach_controls",
    "claim_answer",
]

#: the control arms, in the order the report prints them
CONTROL_ARMS = ("randomised_weights", "shuffled_text")
#: the regime table's arm for the trained models
TRAINED = "trained"
SPECIFIC, STRUCTURAL = "specific", "structural"
#: the verdicts a claim (or one of its axes) can get
VERDICTS = (SPECIFIC, STRUCTURAL, CONTRADICTED)
NO_VERDICT, NOT_RUN = "no verdict", "not run"
#: no verdict for a claim that agrees on the trained models while a control did not produce it (not run, or its
#: stage off there): *specific* says it fails on every control, which only a reading on each can show
CONTROLS_NOT_RUN = "a control did not produce it"
#: the reasons for no verdict, in the report's one order (by construction is structural; no number last)
NO_VERDICT_REASONS = (PARTIAL, CONTROLS_NOT_RUN, *(r for r in NO_ANSWER_ORDER if r != BY_CONSTRUCTION), QUALITATIVE)
#: the columns of the regime table (one row per arm, model and corpus; the trained models' arm is "trained")
REGIME_COLUMNS = ("arm", "model", "corpus", "n_rows", "entropy", "max_weight", "token0_weight")
_AXES = ("direction", "size")
#: what "structural" means, printed with the counts
STRUCTURAL_MEANS = (
    "*Structural* means the claim also agrees, by the same decision rule, on randomised weights or on shuffled "
    "text (or cannot fail at all): it is a property of the attention operator, the selectors and the run's "
    "configuration, not of training or of language -- not evidence that the paper is wrong."
)
_HOLDS_ANYWHERE = "by construction: holds for any weights and any text"


def claim_answer(entry: Mapping) -> str:
    """A claim's answer as one word: its axes' answers combined by the one aggregation; *qualitative* when it
    states no number."""
    statuses = [entry[a]["status"] for a in _AXES if entry.get(a)]
    if not statuses:
        return QUALITATIVE if entry.get("status") == QUALITATIVE else entry.get("status") or NOT_PRODUCED
    return combine(statuses)


def _axis_reason(entry: Mapping, axis: str, status: str) -> str:
    """Why a claim's axis reads ``status``: k of n values answered, else the first such value's reason."""
    a = entry[axis]
    if status in ANSWERED:
        return f"{a['answered']} of {a['values']} values answered"
    for value in entry.get("values", []):
        v = value.get(axis)
        if not value.get("alternative") and v and v["status"] == status:
            return v["reason"]
    return status


def _axis_reading(entry: Mapping, axis: str) -> dict | None:
    a = entry.get(axis)
    if not a:
        return None
    return {
        "status": a["status"],
        "answered": a.get("answered", 0),
        "values": a.get("values", 0),
        "apart": a.get("apart", 0),
        "reason": _axis_reason(entry, axis, a["status"]),
    }


def _reading(arm_entries: Mapping[int, Mapping] | None, claim_id: int) -> dict:
    """A claim on one arm: its claim-level answer (and status) and its answer per axis."""
    if arm_entries is None:
        return {
            "answer": NOT_RUN,
            "status": NOT_RUN,
            "reason": "this control was not run",
            "direction": None,
            "size": None,
        }
    entry = arm_entries.get(claim_id)
    if entry is None:
        return {
            "answer": NOT_PRODUCED,
            "status": NOT_PRODUCED,
            "reason": "the claim is not in this control's report",
            "direction": None,
            "size": None,
        }
    axes = {a: _axis_reading(entry, a) for a in _AXES}
    answer = claim_answer(entry)
    reason = "; ".join(f"{a}: {r['status']} ({r['reason']})" for a, r in axes.items() if r) or answer
    return {"answer": answer, "status": entry["status"], "reason": reason, **axes}


def _arm_status(reading: Mapping, axis: str) -> str:
    if reading["status"] == NOT_RUN:
        return NOT_RUN
    return reading[axis]["status"] if reading.get(axis) else NOT_PRODUCED


def _axis_verdict(trained: str, readings: Mapping[str, Mapping], axis: str) -> dict:
    """One axis's verdict from the trained answer and the controls' answers on that axis (module docstring)."""
    on_arms = {arm: _arm_status(r, axis) for arm, r in readings.items()}
    agree = [arm for arm, s in on_arms.items() if s == AGREES]
    if trained == BY_CONSTRUCTION:
        verdict, reason = STRUCTURAL, _HOLDS_ANYWHERE
    elif trained == CONTRADICTED:
        verdict, reason = CONTRADICTED, "contradicted on the trained models"
    elif trained != AGREES:
        verdict, reason = None, trained
    elif agree:
        verdict, reason = STRUCTURAL, f"agrees on the trained models and on {' and '.join(agree)}"
    elif any(s in (NOT_RUN, NOT_PRODUCED) for s in on_arms.values()):  # specific needs a reading on every control
        verdict, reason = None, CONTROLS_NOT_RUN
    else:
        shown = "; ".join(f"{arm}: {s}" for arm, s in on_arms.items())
        verdict, reason = SPECIFIC, f"agrees on the trained models and on no control ({shown})"
    return {"verdict": verdict, "reason": reason, "trained": trained, "on": on_arms, "agrees_on": agree}


def _claim_verdict(entry: Mapping, readings: Mapping[str, Mapping]) -> dict:
    """A claim's verdict: its axes' verdicts combined (module docstring); ``on`` is each arm's claim-level
    answer."""
    axes = {a: _axis_verdict(entry[a]["status"], readings, a) if entry.get(a) else None for a in _AXES}
    trained = claim_answer(entry)
    agreeing = [v for v in axes.values() if v and v["trained"] == AGREES] if trained == AGREES else []
    agree_on = list(dict.fromkeys(arm for v in agreeing for arm in v["agrees_on"]))
    if trained == CONTRADICTED:
        verdict, reason = CONTRADICTED, "contradicted on the trained models"
    elif trained == BY_CONSTRUCTION:
        verdict, reason = STRUCTURAL, _HOLDS_ANYWHERE
    elif trained != AGREES:
        verdict, reason = None, trained
    elif agree_on:
        verdict, reason = STRUCTURAL, f"agrees on the trained models and on {' and '.join(agree_on)}"
    elif any(v["verdict"] is None for v in agreeing):
        verdict, reason = None, CONTROLS_NOT_RUN
    else:
        verdict, reason = SPECIFIC, "agrees on the trained models and on no control"
    on = {arm: r["answer"] for arm, r in readings.items()}
    return {"verdict": verdict, "reason": reason, "trained": trained, "on": on, "agrees_on": agree_on, **axes}


def _public(verdict: Mapping | None) -> dict | None:
    """A verdict as the claim carries it (the arms' answers are in its ``arms`` readings)."""
    return None if verdict is None else {k: verdict[k] for k in ("verdict", "reason", "trained", "agrees_on")}


def _groups(verdicts: Sequence[tuple[int, Mapping | None]], arms: Sequence[str]) -> dict:
    """Claim ids under each verdict, under each reason for none, and, per arm, the structural claims it agrees
    on and the specific ones it contradicts."""
    judged = [(cid, c) for cid, c in verdicts if c is not None]
    out: dict[str, Any] = {v: [cid for cid, c in judged if c["verdict"] == v] for v in VERDICTS}
    reasons = [c["reason"] for _, c in judged if c["verdict"] is None]
    order = [
        *(r for r in NO_VERDICT_REASONS if r in reasons),
        *dict.fromkeys(r for r in reasons if r not in NO_VERDICT_REASONS),
    ]
    out[NO_VERDICT] = {r: [cid for cid, c in judged if c["verdict"] is None and c["reason"] == r] for r in order}
    structural = [(cid, c) for cid, c in judged if c["verdict"] == STRUCTURAL]
    out["structural via"] = {
        **{arm: [cid for cid, c in structural if arm in c["agrees_on"]] for arm in arms},
        BY_CONSTRUCTION: [cid for cid, c in structural if c["trained"] == BY_CONSTRUCTION],
    }
    out["specific, contradicted on"] = {
        arm: [cid for cid, c in judged if c["verdict"] == SPECIFIC and c["on"].get(arm) == CONTRADICTED] for arm in arms
    }
    return out


def _regime_rows(regime: pl.DataFrame | None, arms: Sequence[str]) -> list[dict] | None:
    """The regime table as rows (trained first, then the arms in order), NaN as null."""
    if regime is None:
        return None
    missing = [c for c in REGIME_COLUMNS if c not in regime.columns]
    if missing:
        raise ValueError(f"regime frame lacks columns {missing}; it must have {list(REGIME_COLUMNS)}")
    order = {arm: i for i, arm in enumerate((TRAINED, *arms))}
    rows = [{c: r[c] for c in REGIME_COLUMNS} for r in regime.iter_rows(named=True)]
    rows.sort(key=lambda r: (order.get(r["arm"], len(order)), str(r["arm"]), str(r["model"]), str(r["corpus"])))
    for r in rows:
        for c in ("entropy", "max_weight", "token0_weight"):
            if r[c] is not None and isinstance(r[c], float) and math.isnan(r[c]):
                r[c] = None
    return rows


def attach_controls(report: dict, arms: Mapping[str, Mapping], regime: pl.DataFrame | None) -> dict:
    """The trained ``report`` with every claim's control readings and verdict (module docstring) and
    ``report["controls"]``: the arms and their models, the claim ids under each verdict (claim-level and per
    axis) and the regime table.  ``arms``: arm name -> that arm's own claims report (same code and schema).
    The input report is not modified."""
    if not arms:
        return {**report, "controls": None}
    for arm, arm_report in arms.items():
        if arm_report.get("key") != report.get("key"):
            raise ValueError(f"control arm {arm!r} was judged by another decision rule (its report's key differs)")
    names = [*CONTROL_ARMS, *(a for a in arms if a not in CONTROL_ARMS)]
    entries = {arm: {e["id"]: e for e in arms[arm]["claims"]} if arm in arms else None for arm in names}
    claims, verdicts = [], []
    for entry in report["claims"]:
        readings = {arm: _reading(entries[arm], entry["id"]) for arm in names}
        v = _claim_verdict(entry, readings)
        public = {**_public(v), **{a: _public(v[a]) for a in _AXES}, "arms": readings}
        claims.append({**entry, "controls": public})
        verdicts.append((entry["id"], v))
    counts = {
        "claims": _groups(verdicts, names),
        **{a: _groups([(i, v[a]) for i, v in verdicts], names) for a in _AXES},
    }
    return {
        **report,
        "claims": claims,
        "controls": {
            "arms": {
                arm: {"run": arm in arms, "models": list(arms[arm].get("models") or []) if arm in arms else None}
                for arm in names
            },
            "counts": counts,
            "structural means": STRUCTURAL_MEANS,
            "regime": _regime_rows(regime, names),
        },
    }
