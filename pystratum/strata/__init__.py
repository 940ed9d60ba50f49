"""Strata: any accepted input form -> one integer code per row, the labels, the sizes.

* ``_encode``: the input forms (see docs/INPUTS.md), encoding by equality, missing values refused;
* ``_object_identity``: an object array's pointers as integers, and whether its rows repeat a few
  objects, so ``_encode`` numbers rows by identity and compares only the distinct objects by value;
* ``_label_matrix``: label matrices (rows x labels of 0/1) for multi-label policies, from
  arrays, tensors, DataFrames, scipy.sparse or label sets per row;
* ``_labels``: how a label reads as text (for people, and as a policy's key, as in R);
* ``_members``: the rows of each stratum, in memory or memory-mapped (lazy plans);
* ``_parquet``: member lists from Parquet columns, chunk by chunk.
"""
