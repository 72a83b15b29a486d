"""Find the documents of a text corpus: a single file, a flat folder, `SRC/<class>/...` or
`SRC/<split>/<class>/...` (class index = position in the sorted class names, as for images).
Every document becomes one work item referring to its text in a spill file (converters/spill.py); unusable files
and records are rejected."""

from __future__ import annotations

from pathlib import Path

from converters.class_folders import ClassFolders, split_classes
from converters.kind import Discovery
from converters.sample import Rejection, WorkItem
from converters.spill import Spill
from converters.table_files import ARROW, HF_METADATA, PARQUET
from converters.table_labels import TableLabels
from converters.text.columnar import labeled_documents
from converters.text.options import TextOptions
from converters.text.record_labels import labeled_records
from converters.text.records import Reject, file_format, read_documents
from converters.text.token_files import TokenSpan
from converters.tree import Collector, split_folders_in, splits_named
from converters.walk import is_folder, listed
from fastdata.errors import ConvertError

TABLES = (*PARQUET, *ARROW)
RECORDS = ("jsonl", "json", "csv", "tsv")  # formats whose records may carry a label field (record_labels.py)
HF_JSON = tuple(n for n in HF_METADATA if n.endswith(".json"))


class _Collector(Collector):
    def __init__(self, src: Path, opts: TextOptions, *, follow: bool) -> None:
        super().__init__(src, follow=follow)
        self.opts = opts
        self.spill = Spill("text")
        self.labels = TableLabels()  # the label column of the first table, which every other must agree with
        self.named_splits = False  # a file of many documents takes the split its name names (no split folders)

    def table_labels(self, classes: tuple[str, ...]) -> tuple[str, ...]:
        """The classes, and the items' labels, when the source's tables label their rows: every document without a
        label (a file that is no table, a table before the first labelled one) is then a rejection."""
        found = self.labels.classes()
        if not found:
            return classes
        unlabeled = [it for items in self.items.values() for it in items if it.label is None]
        for it in unlabeled:
            self.rejected.append(Rejection(it.split, it.rel, f"no label: the source's tables label their documents "
                                                             f"(column {self.labels.column!r}), this file does not"))
        items = {s: [it for it in its if it.label is not None] for s, its in self.items.items()}
        self.items = {s: its for s, its in self.labels.relabel(items, found).items() if its}
        return found

    def add_file(self, path: Path, split: str, label: int | None, rel: str | None = None) -> None:
        rel = rel or self.rel(path)  # a regular file: `Walk.problem` was asked before
        if path.name.lower() in HF_JSON:  # save_to_disk's JSON beside its tables (a README is no text file)
            self.rejected.append(Rejection(split, rel, "Hugging Face metadata, not data: the tables' schema holds "
                                                       "the features"))
            return
        if self.named_splits and _holds_many(path.name, self.opts):
            named = splits_named(path.name)
            if len(named) > 1:
                self.rejected.append(Rejection(split, rel, f"the name names the splits {', '.join(sorted(named))}; "
                                                           "rename it, or move it into a split folder"))
                return
            split = named.pop() if named else split
        found, rejected_before = 0, len(self.rejected)
        source = str(path)  # one string shared by the file's documents
        if label is None and path.suffix.lower() in TABLES and not self.opts.unlabeled:  # a table's label column
            rows = labeled_documents(path, self.opts, self.labels, rel)
        elif label is None and file_format(path.name)[0] in RECORDS and not self.opts.unlabeled:  # a label field
            rows = labeled_records(path, self.opts, self.labels, rel)
        else:
            rows = ((where, doc, label) for where, doc in read_documents(path, self.opts))
        for where, doc, value in rows:
            if isinstance(doc, Reject):
                self.rejected.append(Rejection(split, rel + where, doc.reason))
                continue
            found += 1
            self.items.setdefault(split, []).append(
                WorkItem(split=split, rel=rel + where, source=source, label=value,
                         payload=doc if isinstance(doc, TokenSpan) else self.spill.add(doc)))  # a span is read in place
        if found == 0 and len(self.rejected) == rejected_before:
            self.rejected.append(Rejection(split, rel, "no documents (only blank or separator lines)"))
        self.identity.append([split, rel, label, path.stat().st_size if path.exists() else -1, found])


def _holds_many(name: str, opts: TextOptions) -> bool:
    """Whether the file `name` holds many documents (a table, JSON, JSON Lines, or plain text read a line or a record
    at a time), so that its name may say a split: `train.jsonl`, `test-00000-of-00001.parquet`, `ptb.valid.txt`."""
    fmt, _ = file_format(name)
    return fmt is not None and (fmt != "plain" or opts.per_line or opts.separator is not None)


def _add_split(col: _Collector, folder: Path, split: str, folders: ClassFolders, *, labeled: bool) -> None:
    """A folder of either class subfolders (`labeled`: the corpus has class folders) or plain files."""
    index = {c: i for i, c in enumerate(folders.classes)}
    for name in listed(folder):
        path = folder / name
        if not labeled:
            if is_folder(path, follow=col.walk.follow):
                col.add_tree(path, split, None)
            else:
                col.take(path, split, None)
        elif not is_folder(path, follow=col.walk.follow):
            col.reject(path, split, "not inside a class folder")
        elif name not in index:
            col.reject(path, split, folders.why_not(name))
        else:
            col.add_tree(path, split, index[name])


def discover_text(src: Path, /, *, options: TextOptions, extra_identity: list[object] = (),
                  follow_symlinks: bool = True) -> Discovery:
    col = _Collector(src, options, follow=follow_symlinks)
    if not src.is_dir():
        problem = col.walk.problem(src)
        if problem is not None:
            raise ConvertError(f"source {src} cannot be read: {problem}")
        col.named_splits = True
        col.add_file(src, options.split, None, rel=src.name)
        classes = col.table_labels(())
        col.spill.flush()
        return Discovery(col.items, classes, col.rejected, "file", [*extra_identity, *col.identity], keep=col.spill)
    top = listed(src)
    dirs = [n for n in top if is_folder(src / n, follow=follow_symlinks)]
    splits = split_folders_in(src, dirs, follow=follow_symlinks)
    if options.unlabeled:  # every document of the tree, without a label: class folders are plain folders
        layout, classes, col.named_splits = "unlabeled", (), not splits
        if splits:
            col.reject_outside(top, list(splits))
        for folder, s in (splits or {"": options.split}).items():
            _add_split(col, src / folder if folder else src, s, ClassFolders.of(()), labeled=False)
    elif splits:
        # every class folder, whether or not its name can be a class
        folders = ClassFolders.of(split_classes(src, splits, follow=col.walk.follow))
        classes = folders.classes
        layout = "split/class" if folders.found else "split"
        col.reject_outside(top, list(splits))
        for folder, s in splits.items():
            _add_split(col, src / folder, s, folders, labeled=bool(folders.found))
    elif dirs:
        folders = ClassFolders.of(dirs)
        layout, classes = "class", folders.classes
        _add_split(col, src, options.split, folders, labeled=True)
    else:
        layout, classes, col.named_splits = "flat", (), True
        _add_split(col, src, options.split, ClassFolders.of(()), labeled=False)
    classes = col.table_labels(classes)
    col.warn_unused(classes, "documents")
    col.spill.flush()
    return Discovery(col.items, classes, col.rejected, layout, [*extra_identity, *col.identity], keep=col.spill)
