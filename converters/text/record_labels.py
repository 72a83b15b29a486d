"""The labels of a text corpus' records: a JSON Lines, JSON or CSV/TSV file labels its documents with the field
`--label-field`, else its `label` or `labels` field (Kaggle's `text,label` CSV, a classification dataset's JSON
Lines), read by the rule of a table's label column (converters/table_labels.py: every file must agree with the
first, ids stay labels, names are sorted).

A file's label field is chosen at its first record (a CSV's header): the one `--label-field` names (a file without
it is rejected whole), else `label`, else `labels`, when its first value is a whole number or a name; a field of
other values (a list of tags) labels nothing. A record's label is then a whole number or a name (stripped);
null, an empty name, or another value is a rejection of that record.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from converters.images.table_columns import LABEL_NAMES
from converters.table_files import TableError
from converters.table_labels import TableLabels
from converters.text.options import TextOptions
from converters.text.records import Reject, fields_of, read_records


def _value(value: Any) -> Any:
    """A record's label as a class id or name (stripped), None when it has none, or a Reject for another value."""
    if isinstance(value, str):
        return value.strip() or None
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    shown = "true" if value is True else "false" if value is False else type(value).__name__
    return Reject(f"label is no whole number or name: {shown}")


def _field(record: dict, opts: TextOptions) -> str | None:
    """The label field of a file whose first record is `record` (None: it labels nothing); TableError when
    `--label-field` names a field it lacks."""
    if opts.label_field is not None:
        if opts.label_field not in record:
            raise TableError(f"no field {opts.label_field!r} (--label-field; fields: {fields_of(record)})")
        return opts.label_field
    name = next((n for n in LABEL_NAMES if n in record), None)
    return name if name is not None and not isinstance(_value(record[name]), Reject) else None


def labeled_records(path: Path, opts: TextOptions, labels: TableLabels,
                    rel: str) -> Iterator[tuple[str, str | bytes | Reject, Any]]:
    """(where, document or rejection, label value or None) for each record of a JSON Lines, JSON or CSV/TSV file,
    its label field agreed with the source's first labelled file (`labels`)."""
    field: str | None = None
    decided = False
    for where, doc, record in read_records(path, opts):
        if not decided and isinstance(record, dict):
            decided = True
            try:
                field = _field(record, opts)
                if field is not None:  # a file without one is no table of labels: its documents go unlabeled
                    labels.agree(rel, field, None)
            except TableError as exc:
                yield "", Reject(str(exc)), None
                return
        if field is None or isinstance(doc, Reject) or not isinstance(record, dict):
            yield where, doc, None
            continue
        value = _value(record.get(field))
        why = value.reason if isinstance(value, Reject) else labels.take(value, field, None)
        yield where, (Reject(why) if why else doc), None if why else value
