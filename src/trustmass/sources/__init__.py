"""Sources: models, corpora and documents, prepared once under ``resources/``.

* :mod:`trustmass.sources.models` -- a model as a plain Hugging Face folder (packaged GGUF, local, hub);
  :func:`model_shapes` reads the attention geometry from a config, never from a per-model table.
* :mod:`trustmass.sources.gguf_convert` -- a GGUF's metadata summary and its conversion to that folder.
* :mod:`trustmass.sources.corpora` -- a corpus as one UTF-8 text with a record of its inputs.
* :mod:`trustmass.sources.html_text` -- the visible text of an HTML page (the handbook corpus).
* :mod:`trustmass.sources.documents` -- a corpus tokenized per model and cut into documents.
* :mod:`trustmass.sources.needles` -- RULER-style needles and variable chains planted in a haystack in
  token space (the deployment stage's retrieval items are made of them).
* :mod:`trustmass.sources.task_contexts` -- task-structured contexts (§2.7) as a document set whose
  manifest names each document's retrieval rows.

Imports here are light (no torch, no transformers); the submodules import what they need.
"""

from trustmass.sources.common import SourceError
from trustmass.sources.shapes import check_declared_shape, model_shapes

__all__ = ["SourceError", "check_declared_shape", "model_shapes"]
