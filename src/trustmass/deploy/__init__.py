"""Deployment (spec part B): eviction methods run under enforced budgets, with bytes measured.

``ragged`` holds a physically ragged KV cache (one K/V tensor per layer and KV head) and the
attention function that decodes over it; ``ledger`` measures the bytes a cache really holds;
``contourkv`` allocates one global threshold's kept sets (spec §7.1) from kvpress scores; ``h2o_press``
is H2O as a kvpress press; ``methods`` is the method roster and ``runner`` runs an item through every method
(one fan-out prefill, ragged decode, byte-ledger columns).
"""
