"""Token ids already made: a Parquet or Arrow column of lists of integers (`--ids-field input_ids`, what
`datasets.map(tokenizer)` writes), or a JSON Lines or JSON field holding such a list, taken as they are instead of
tokenizing text. A row's ids travel to the worker as int64 bytes in the spill file; the worker checks them against
the tokenizer's vocabulary (tokenize.py).

Rows are cut from each record batch's flat values with numpy, not turned into Python lists: a row of 2,048 ids is
one slice, not 2,048 objects."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from converters.text.records import Reject, fields_of, too_large

ID_BYTES = 8  # a spilled id: int64
IDS_COLUMNS = ("input_ids", "ids", "tokens")  # names a table of token ids gives its column, for a hint


def ids_column_problem(schema: Any, field: str) -> Reject | None:
    """Why `schema` holds no column `field` of lists of integers (None: it does)."""
    import pyarrow as pa

    if field not in schema.names:
        return Reject(f"missing token ids column {field!r} (columns: {', '.join(schema.names[:8])}); set --ids-field")
    kind = schema.field(field).type
    lists = (pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind))
    if not lists or not pa.types.is_integer(kind.value_type):
        return Reject(f"column {field!r} has type {kind}, not a list of integers (token ids)")
    return None


def ids_rows(field: str) -> Callable[[Any], list[dict[str, Any]]]:
    """The `values` of Table.rows for a batch whose column `field` holds lists of integers: each row as {column:
    value}, `field`'s value an int64 array, None for a null row, or a Reject for a row holding a null id."""

    def values(batch: Any) -> list[dict[str, Any]]:
        import pyarrow.compute as pc

        column = batch.column(field)
        lengths = pc.list_value_length(column).fill_null(0).to_numpy(zero_copy_only=False)
        starts = np.cumsum(lengths) - lengths
        valid = column.is_valid().to_numpy(zero_copy_only=False)
        flat = pc.list_flatten(column)  # a null row has no values here
        holed = set()
        if flat.null_count:
            parents = pc.list_parent_indices(column).to_numpy(zero_copy_only=False)
            holed = set(parents[flat.is_null().to_numpy(zero_copy_only=False)].tolist())
        numbers = flat.fill_null(0).to_numpy(zero_copy_only=False)
        if numbers.dtype == np.uint64:  # past int64: as large as int64 goes (outside any vocabulary, said so)
            numbers = np.minimum(numbers, np.iinfo(np.int64).max)
        numbers = numbers.astype(np.int64, copy=False)
        others = {name: batch.column(name).to_pylist() for name in batch.schema.names if name != field}
        rows = []
        for i in range(batch.num_rows):
            ids = (Reject("a null token id") if i in holed else numbers[starts[i]:starts[i] + lengths[i]]
                   if valid[i] else None)
            rows.append({field: ids, **{name: v[i] for name, v in others.items()}})
        return rows

    return values


def ids_document(value: Any, cap: int) -> bytes | Reject:
    """A row's token ids as the int64 bytes spilled for the worker, or why the row is no document: null, no ids, a
    null or negative id, or over `cap` bytes at ID_BYTES an id."""
    if isinstance(value, Reject):
        return value
    if value is None:
        return Reject("null token ids")
    if not len(value):
        return Reject("empty document (no token ids)")
    if len(value) * ID_BYTES > cap:
        return too_large(cap)
    if value.min() < 0:
        return Reject(f"a negative token id ({int(value.min())})")
    return np.ascontiguousarray(value, dtype="<i8").tobytes()


def json_ids(obj: object, field: str, cap: int) -> bytes | Reject:
    """A JSON record's list of token ids in `field` as `ids_document` spills it, or why it holds none."""
    if not isinstance(obj, dict):
        return Reject(f"expected a JSON object with a {field!r} field, got {type(obj).__name__}")
    if field not in obj:
        return Reject(f"missing token ids field {field!r} (fields: {fields_of(obj)}); set --ids-field")
    value = obj[field]
    if value is None:
        return Reject("null token ids")
    if not isinstance(value, list):
        return Reject(f"field {field!r} holds {type(value).__name__}, not a list of integers (token ids)")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        odd = next(v for v in value if not isinstance(v, int) or isinstance(v, bool))
        return Reject(f"field {field!r} holds {type(odd).__name__ if odd is not None else 'null'} among its token ids")
    # past int64 either way: as far as int64 goes (a negative id, or one outside any vocabulary, said so)
    return ids_document(np.array([min(max(v, -2**63), 2**63 - 1) for v in value], dtype=np.int64), cap)


def spilled_ids(data: bytes) -> np.ndarray:
    """The ids `ids_document` spilled."""
    return np.frombuffer(data, dtype="<i8")
