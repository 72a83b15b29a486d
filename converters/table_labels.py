"""The labels of a source's tables, for every kind that reads tables (images, text): the label column of the first
table sets the labels (its ClassLabel's names, or the values it holds), every other table must agree, a row's label
is checked (`take`), and the classes come out in label order (`classes`, `relabel`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from converters.class_folders import has_control_characters
from converters.sample import WorkItem
from converters.table_files import TableError
from fastdata.errors import ConvertError


def label_problem(label: Any, column: str, names: tuple[str, ...] | None, field: str = "column") -> str | None:
    """Why `label`, the value of `column` (a table's column, or what `field` says), is no label (None: it is one).
    What varies comes after the first colon, where reasons are grouped."""
    if label is None:
        return f"no label (null in {field} {column!r})"
    if names is None:
        return None
    if label == -1:
        return f"no label (-1 in ClassLabel column {column!r}: the split has no labels)"
    if not 0 <= label < len(names):
        return f"label is no class of {field} {column!r} ({len(names)} classes): {label}"
    return None


class TableLabels:
    """The label column and class names of the first table, and the label values seen."""

    def __init__(self, field: str = "column") -> None:
        self.first: tuple[str, str | None, tuple[str, ...] | None] | None = None  # (table, column, names)
        self.values: set[Any] = set()
        self.field = field  # what a label is found in, as messages name it: a table's column, a record's feature

    def agree(self, rel: str, column: str | None, names: tuple[str, ...] | None) -> None:
        """Take the labels of the table `rel` (the first sets them); TableError when they differ from the first's."""
        if self.first is None:
            self.first = (rel, column, names)
            return
        first, want, want_names = self.first
        if (column is None) != (want is None) or names != want_names:
            have = f"label {self.field} {want!r}" if want else f"no label {self.field}"
            raise TableError(f"its labels are not those of {first} ({have}"
                             f"{f' with {len(want_names)} classes' if want_names else ''}): convert them apart")

    @property
    def column(self) -> str | None:
        return self.first[1] if self.first else None

    def take(self, label: Any, column: str, names: tuple[str, ...] | None) -> str | None:
        """Why a row's label is none (a rejection), or None after noting its value."""
        problem = label_problem(label, column, names, self.field)
        if problem is None:
            self.values.add(label)
        return problem

    def take_many(self, labels: Any, column: str, names: tuple[str, ...] | None) -> str | None:
        """A --multi-label row's list of labels: why it is none (a rejection), or None after noting its values."""
        if labels is None:
            return f"no labels (null in {self.field} {column!r})"
        problem = next((p for p in (label_problem(v, column, names, self.field) for v in labels) if p), None)
        if problem is None:
            self.values.update(labels)
        return problem

    def classes(self) -> tuple[str, ...]:
        """The class names: the ClassLabel's, or the label values in `label_order`; () without a label column."""
        from converters.images.labels_csv import label_order  # (the images package imports this module)

        if self.first is None or self.first[1] is None:
            return ()
        _, column, names = self.first
        classes = names or label_order({str(v) for v in self.values})
        bad = next((c for c in classes if has_control_characters(c)), None)
        if bad is not None:
            raise ConvertError(f"the class {bad!r} of {self.field} {column!r} holds control characters (an escape "
                               "sequence, a tab, a newline, a bidi override): not a name to print")
        return classes

    def relabel(self, items: dict[str, list[WorkItem]], classes: tuple[str, ...]) -> dict[str, list[WorkItem]]:
        """`items` with class indices for labels (a ClassLabel's values are indices already); a --multi-label row's
        list of labels becomes the sorted tuple of its classes, each once."""
        if self.first is None or not classes:
            return items
        index = None if self.first[2] is not None else {c: i for i, c in enumerate(classes)}

        def of(label: Any) -> Any:
            if isinstance(label, list):
                return tuple(sorted({v if index is None else index[str(v)] for v in label}))
            return label if index is None else index[str(label)]

        return {s: [replace(it, label=of(it.label)) for it in its] for s, its in items.items()}
