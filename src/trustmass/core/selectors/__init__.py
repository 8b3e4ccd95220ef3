"""Kept-set rules.  Each returns key indices (ascending) for one attention row and budget s."""

from trustmass.core.operator import top_mass
from trustmass.core.selectors.balancing import Balanced, balancing
from trustmass.core.selectors.geometric import (
    FrankWolfeTrace,
    Geometric,
    frank_wolfe_support,
    frank_wolfe_trace,
    geometric,
)
from trustmass.core.selectors.group_vote import group_vote
from trustmass.core.selectors.leverage import leverage, ridge_leverage_scores, top_leverage

__all__ = [
    "Balanced",
    "FrankWolfeTrace",
    "Geometric",
    "balancing",
    "frank_wolfe_support",
    "frank_wolfe_trace",
    "geometric",
    "group_vote",
    "leverage",
    "ridge_leverage_scores",
    "top_leverage",
    "top_mass",
]
