"""The dress rehearsal of the paper's run (issue 39): the paper's configurations executed once, offline, on this
machine, through the code a cluster run takes.

* :mod:`~trustmass.rehearsal.hub` writes a local Hugging Face cache (hub snapshots, refs, blobs; the
  ``datasets`` cache an earlier online ``load_dataset`` leaves) that ``HF_HUB_OFFLINE=1`` resolves;
* :mod:`~trustmass.rehearsal.tokenizers` and :mod:`~trustmass.rehearsal.architectures` make small random-weight
  models of each paper architecture (model class, attention geometry, special tokens; fewer layers, a small
  hidden size; a tokenizer from the packaged models);
* :mod:`~trustmass.rehearsal.data` the datasets the configurations name (wikitext-103's test split, RULER and
  LongBench in kvpress's format) and what the hub-only methods download (KVzap's scorers, FastKVzip's gates,
  BookSum for DuoAttention's head scores);
* :mod:`~trustmass.rehearsal.build` puts them under the configurations' own repository ids and revisions;
* :mod:`~trustmass.rehearsal.run` runs the paper's plans with ``config/rehearsal.yaml`` over them and
  :mod:`~trustmass.rehearsal.check` compares the rules that ran with the rules planned.

``python -m trustmass.rehearsal --help``; ``make rehearse``; docs/rehearsal.md.
"""
