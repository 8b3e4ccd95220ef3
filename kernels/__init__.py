"""GPU kernels (Triton) with their PyTorch reference twins; installed as ``trustmass.kernels``.

The capture kernels (row log-sum-exp / exact row probabilities, streaming column mass and window
sums) arrive with the capture stage; see the issue tracker.
"""
