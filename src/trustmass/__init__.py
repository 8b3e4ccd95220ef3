"""trustmass: regenerate "Trust the Mass: Forced Weights in KV-Cache Eviction" from raw attention."""

__version__ = "0.1.0"
