"""Held-out loss under the restricted operator (paper spec §6, App B.6, App E).

The restricted forward replaces each head's output on the continuation rows by
m_A = sum_{j in A} P_ij v_j / sum_{j in A} P_ij, with A chosen per (layer, query head, row) by the
selector under test; the stage measures held-out continuation cross-entropy, the rank-16 probe,
curvature and the allocation panel.
"""
