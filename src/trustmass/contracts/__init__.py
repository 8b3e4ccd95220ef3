"""Contracts between stages: the file formats one stage writes and later stages read.

Readers here need numpy, safetensors and polars only -- never torch, and never the stage that
writes the files -- so a stage that reads another stage's output depends on the format alone
(design.md, "Contracts between stages").
"""
