"""Parquet files as shards: row groups (or whole files), column projection, local paths or URLs.

The files are taken in the order :func:`pystratum.parquet_strata` reads
them (the list's order, else sorted by path), so row ``i`` here is row
``i`` of the strata and of every plan built from them.
"""

from __future__ import annotations

import hashlib
import json
import posixpath

import numpy as np

from ..base._validation import check_bool, check_choice, check_int, show
from ..strata._parquet import _open_dataset, _ordered_fragments
from ._checks import schema_differences

__all__ = ["ParquetShards"]


def _groups_text(groups) -> str:
    """Row group sizes, runs of equal sizes written once: ``[500, 500, 20]`` -> ``2 x 500, 20``."""
    if not groups:
        return "no row group"
    parts, k = [], 0
    while k < len(groups):
        run = k
        while run < len(groups) and groups[run] == groups[k]:
            run += 1
        parts.append(f"{run - k} x {groups[k]}" if run - k > 1 else str(groups[k]))
        k = run
    return "row groups of " + ", ".join(parts) + " rows"


def _footer_digest(stream, path) -> str:
    """A digest of a file's footer bytes (row groups, their sizes, offsets and statistics,
    schema, writer), read from its last bytes: a few reads, no decoding, so cheap enough to
    repeat every epoch even for thousands of row groups."""
    size = stream.size()
    tail = stream.read_at(8, size - 8) if size >= 12 else b""
    length = int.from_bytes(tail[:4], "little") if len(tail) == 8 else -1
    if tail[4:] != b"PAR1" or not 0 < length <= size - 12:
        raise ValueError(f"the Parquet file {path!r} has no plain Parquet footer (truncated, "
                         f"encrypted or not Parquet): the reader cannot check it for changes.")
    return hashlib.sha256(stream.read_at(length, size - 8 - length)).hexdigest()[:16]


def _names_under_root(paths: list) -> list:
    """Each file's path below the files' common directory (``"part-0.parquet"``,
    ``"2024/part-1.parquet"``): what identifies a file of the dataset wherever it is stored, so
    that a resume state does not hold a machine's absolute paths."""
    # Arrow filesystems give "/"-separated paths (local ones included), URLs without protocol.
    folders = [posixpath.dirname(path) for path in paths]
    try:
        root = posixpath.commonpath(folders) if all(folders) else ""
    except ValueError:  # absolute and relative paths mixed: no common root
        root = ""
    if not root:
        return list(paths)
    return [posixpath.relpath(path, root) for path in paths]


def _file_records(fingerprint: dict):
    """``{path: (row group sizes, digest)}`` of a :meth:`ParquetShards.fingerprint` record, or
    None when the record is not one it writes (a forged or corrupted resume state)."""
    files = fingerprint.get("files", [])
    if not isinstance(files, list) or not all(
            isinstance(entry, (list, tuple)) and len(entry) == 3 and isinstance(entry[0], str)
            and isinstance(entry[1], (list, tuple))
            and all(isinstance(n, int) and not isinstance(n, bool) for n in entry[1])
            for entry in files):
        return None
    return {path: (groups, digest) for path, groups, digest in files}


class ParquetShards:
    """A :class:`~pystratum.shards.ShardReader` over Parquet files.

    source:   a file or directory path, a list of files, an fsspec URL
              (``"s3://bucket/data/"``, ``"memory://..."``) or a
              ``pyarrow.dataset.Dataset`` (as :func:`pystratum.parquet_strata`).
    columns:  the columns to read (default: all); the others are never decoded.
    shard_by: ``"row_group"`` (default: each row group is a shard) or ``"file"``.
    progress: show a tqdm bar while the footers are read (one per file: long
              on object storage with many files).

    ``load(h)`` returns a ``pyarrow.Table``. The footers read at construction
    are the reader's :meth:`fingerprint`. :meth:`check_unchanged` reads every
    footer again and refuses a file whose footer has changed since
    (rewritten, appended to) with a ValueError naming the file;
    :class:`~pystratum.shards.ShardedBatches` calls it before it serves the
    first row of every epoch and of every resume, in every worker, so rows
    are never served from other data across epochs. Within an epoch,
    ``load`` trusts the footers checked last (it decodes row groups at the
    offsets they give, without parsing them again).
    """

    def __init__(self, source, columns=None, *, filesystem=None, shard_by: str = "row_group",
                 progress: bool = False):
        try:
            import pyarrow as pa
            import pyarrow.dataset as ds
        except ImportError:  # pragma: no cover - exercised only without pyarrow
            raise ImportError("ParquetShards needs pyarrow: pip install 'stratabatch[shards]'.") \
                from None
        self.shard_by = check_choice(shard_by, "shard_by", ("row_group", "file"))
        progress = check_bool(progress, "progress")
        dataset = _open_dataset(source, "parquet", filesystem, ds, pa)
        fragments = _ordered_fragments(dataset, source)
        if not fragments:
            raise ValueError(f"source must hold at least one Parquet file, got source="
                             f"{show(source)} with none.")
        self._filesystem = dataset.filesystem
        self.paths = [fragment.path for fragment in fragments]
        if columns is not None:
            given = columns
            columns = [columns] if isinstance(columns, str) else \
                list(columns) if isinstance(columns, (list, tuple)) else None
            if not columns or not all(isinstance(c, str) for c in columns):
                raise TypeError(f"columns must be None, a column name or a list of them, got "
                                f"columns={show(given)}.")
            twice = sorted({c for c in columns if columns.count(c) > 1})
            if twice:
                raise ValueError(f"columns names {twice!r} more than once, got columns="
                                 f"{show(given)}; a table holds each column once: name each "
                                 f"column once.")
        self.columns = columns
        self._files = []  # per file: (rows per row group, footer digest)
        self._footers = {}  # per file: its parsed footer as last checked (this process only)
        first_schema = None
        for f, path in enumerate(self._progress(self.paths, progress)):
            with self._filesystem.open_input_file(path) as stream:
                digest = _footer_digest(stream, path)
                metadata = self._parse(stream)
            self._check_columns(path, metadata)
            schema = self._served_schema(metadata)
            if first_schema is None:
                first_schema = schema
            else:
                self._check_same_schema(first_schema, schema, path)
            groups = [metadata.row_group(g).num_rows for g in range(metadata.num_row_groups)]
            self._files.append((groups, digest))
            self._footers[f] = metadata
        if self.shard_by == "file":
            sizes = [sum(groups) for groups, _ in self._files]
            self._where = [(f, None) for f in range(len(self._files))]
        else:
            sizes = [n for groups, _ in self._files for n in groups]
            self._where = [(f, g) for f, (groups, _) in enumerate(self._files)
                           for g in range(len(groups))]
        if not sizes or sum(sizes) == 0:
            raise ValueError(f"source must hold at least one row, got source={show(source)} "
                             f"whose {len(self.paths)} file(s) are empty.")
        self.shard_sizes = np.asarray(sizes, dtype=np.int64)

    @staticmethod
    def _progress(paths, show_bar):
        if not show_bar:
            return paths
        try:
            from tqdm.auto import tqdm
        except ImportError:  # pragma: no cover - exercised only without tqdm
            raise ImportError("progress=True needs tqdm: pip install 'stratabatch[shards]'.") \
                from None
        return tqdm(paths, desc="Parquet footers", unit="file")

    def __getstate__(self):
        # Parsed footers stay in the process that checked them: a DataLoader worker checks
        # (and parses) the footers itself, at the start of its run.
        state = self.__dict__.copy()
        state["_footers"] = {}
        return state

    @staticmethod
    def _parse(stream):
        import pyarrow.parquet as pq

        return pq.ParquetFile(stream).metadata

    def check_unchanged(self) -> None:
        """Read every file's footer again; a ValueError names the first file whose footer changed
        since the reader was built (its row groups then and now). Cost: a few small reads per
        file, no decoding (footers are parsed again only when they changed, to explain)."""
        for f, path in enumerate(self.paths):
            with self._filesystem.open_input_file(path) as stream:
                if _footer_digest(stream, path) != self._files[f][1]:
                    now = self._parse(stream)
                    groups = [now.row_group(g).num_rows for g in range(now.num_row_groups)]
                    raise ValueError(
                        f"the Parquet file {path!r} changed since the reader read its footer "
                        f"({_groups_text(self._files[f][0])} then, {_groups_text(groups)} now, "
                        f"or other metadata): the plan's rows would not be the data's. "
                        f"Re-create the reader and the plan from the data as it is now.")
                if f not in self._footers:
                    self._footers[f] = self._parse(stream)

    def _check_columns(self, path, metadata) -> None:
        if self.columns is None:
            return
        names = metadata.schema.to_arrow_schema().names
        missing = [c for c in self.columns if c not in names]
        if missing:
            raise ValueError(f"columns {missing!r} not found in {path!r}; its columns are "
                             f"{names!r}.")

    def _served_schema(self, metadata):
        """The Arrow schema of the rows this reader serves from a file (its chosen columns)."""
        schema = metadata.schema.to_arrow_schema().remove_metadata()
        if self.columns is None:
            return schema
        import pyarrow as pa

        return pa.schema([schema.field(c) for c in self.columns])

    def _check_same_schema(self, first, schema, path) -> None:
        """Every file serves the same columns and types, or batches mixing files could not be
        concatenated and batches from different files would differ in type."""
        if schema.equals(first):
            return
        differences = schema_differences(first, schema)
        shared = [n for n in first.names if n in schema.names and first.field(n).type.equals(
            schema.field(n).type)]
        raise ValueError(
            f"source must hold Parquet files of one schema (over the columns read), but "
            f"{path!r} differs from {self.paths[0]!r}: "
            f"{'; '.join(differences) or 'column order'}. Pass columns= a list of the columns "
            f"every file holds with the same type (here {shared!r}), or rewrite the files with "
            f"one schema.")

    def load(self, shard: int):
        """Shard ``shard`` decoded: one row group (or file), the chosen columns only.

        Read at the offsets of the footer last checked (:meth:`check_unchanged`,
        or at construction): the footer is not parsed again on every load."""
        import pyarrow.parquet as pq

        # A negative index would silently read a shard from the end: refused like any other.
        shard = check_int(shard, "shard", minimum=0, maximum=len(self._where) - 1,
                          fix=f"Pass a shard index in 0..{len(self._where) - 1}.")
        f, group = self._where[shard]
        if f not in self._footers:
            self.check_unchanged()  # a copy of the reader in a new process: check first
        with self._filesystem.open_input_file(self.paths[f]) as stream:
            parquet = pq.ParquetFile(stream, metadata=self._footers[f])
            if group is None:
                return parquet.read(columns=self.columns)
            return parquet.read_row_group(group, columns=self.columns)

    def fingerprint(self) -> dict:
        """The files, their row groups' rows and footer digests, the columns and shard rule.

        Files are named by their paths under the files' common directory, not
        by absolute paths: a resume state moved with its data to another
        directory or machine still matches, and changed data (row groups or
        any footer byte) still does not."""
        return {"shard_by": self.shard_by, "columns": self.columns,
                "files": [[name, groups, digest] for name, (groups, digest)
                          in zip(_names_under_root(self.paths), self._files)]}

    @staticmethod
    def describe_change(saved: dict, now: dict) -> str | None:
        """What changed between two :meth:`fingerprint` records, in words (None: nothing)."""
        # Compared as JSON text: a forged record's numpy values must not compare elementwise.
        def text(value):
            return json.dumps(value, sort_keys=True, default=repr)

        if text(saved) == text(now):
            return None
        notes = []
        for key in ("shard_by", "columns"):
            if text(saved.get(key)) != text(now.get(key)):
                notes.append(f"{key} {saved.get(key)!r} -> {now.get(key)!r}")
        old, new = _file_records(saved), _file_records(now)
        if old is None or new is None:
            return "; ".join(notes + ["the saved 'files' record is not one fingerprint() writes "
                                      "([path, row group sizes, digest] per file)"])
        gone = [p for p in old if p not in new]
        added = [p for p in new if p not in old]
        if gone:
            notes.append(f"file(s) removed: {gone}")
        if added:
            notes.append(f"file(s) added: {added}")
        for path in old:
            if path in new and old[path] != new[path]:
                if old[path][0] != new[path][0]:
                    notes.append(f"{path!r}: {_groups_text(old[path][0])} -> "
                                 f"{_groups_text(new[path][0])}")
                else:
                    notes.append(f"{path!r}: same row counts, other metadata (footer digest "
                                 f"{old[path][1]} -> {new[path][1]})")
        if not notes and list(old) != list(new):
            notes.append("the files' order changed")
        return "; ".join(notes) or "the files' records differ"
