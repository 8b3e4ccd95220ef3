"""SnapKV's observation window at a budget: the one definition.

The audit's SnapKV (``selectors.deployed.SnapKV``) votes with the window sum of the last
``w = max(1, min(32, s/2))`` rows at budget ``s`` (``s/2`` is ``s // 2``; ``w = 1`` is the row
itself, which capture never stores).  The config check (``plumbing.config_checks``) asks capture to
store every such window at the configured budgets, so that the audit cannot fail hours later.

Deliberately free of imports: the workflow reads it at start-up, through the config check.
"""

#: the cap on the observation window
SNAPKV_MAX_WINDOW = 32
#: the rule in words, for messages
SNAPKV_WINDOW_RULE = f"max(1, min({SNAPKV_MAX_WINDOW}, s/2))"
#: the windows capture stores by default: those of the default budgets 4..256 (restates
#: ``capture.prefill.SNAPKV_WINDOWS``, which is not imported: capture needs torch; a test keeps them equal)
SNAPKV_WINDOWS = (2, 4, 8, 16, 32)


def snapkv_window(budget: int, max_window: int = SNAPKV_MAX_WINDOW) -> int:
    """SnapKV's observation window at `budget`: max(1, min(max_window, budget // 2))."""
    return max(1, min(max_window, int(budget) // 2))
