"""pystratum's batches inside other projects' trainers (each module imports its project).

* :mod:`pystratum.integrations.transformers`: ``StratifiedTrainer``, a Hugging
  Face ``Trainer`` whose training loader serves stratified batches.
* :mod:`pystratum.integrations.sentence_transformers`: ``batch_sampler(policy)``
  for ``SentenceTransformerTrainingArguments(batch_sampler=...)``.

Install them with ``pip install 'stratabatch[hf]'``. Lightning and plain
accelerate need no integration: see ``vignettes/trainers.md``.
"""

__all__: list = []
