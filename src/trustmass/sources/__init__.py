"""Sources: models, corpora and documents, prepared once under ``resources/``.

* :mod:`trustmass.sources.models` -- a model as a plain Hugging Face folder (packaged GGUF, local, hub);
  :func:`model_shapes` reads the attention geometry from a config, never from a per-model table.
* :mod:`trustmass.sources.corpora` -- a corpus as one UTF-8 text with a record of its inputs.
* :mod:`trustmass.sources.documents` -- a corpus tokenized per model and cut into documents.

Imports here are light (no torch, no transformers); the submodules import what they need.
"""

from trustmass.sources.common import SourceError
from trustmass.sources.shapes import check_declared_shape, model_shapes

__all__ = ["SourceError", "check_declared_shape", "model_shapes"]
