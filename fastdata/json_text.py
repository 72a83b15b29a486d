"""JSON from files fastdata did not write (manifests, volume members, JSONL corpora, captions files).

`json.loads` fails on such text in more ways than `JSONDecodeError`: a number of more than 4,300 digits is a
plain `ValueError` (Python's limit on int conversion), nesting past the interpreter's recursion limit is a
`RecursionError`, and undecodable bytes are a `UnicodeDecodeError`. `parse_json` turns each into one
`BadJSON`, whose message is a single line, so every caller catches one exception and none escapes.
"""

from __future__ import annotations

import json
from typing import Any


class BadJSON(ValueError):
    """Text that is not a JSON value this interpreter can read; the message says why in one line."""


def parse_json(text: str | bytes) -> Any:
    """The JSON value of `text` (bytes are decoded as UTF-8); BadJSON for anything `json.loads` cannot read."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadJSON(f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    except RecursionError as exc:
        raise BadJSON("JSON nested too deeply to read") from exc
    except ValueError as exc:  # UnicodeDecodeError, or a number past int()'s digit limit
        raise BadJSON(f"unreadable JSON: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from exc
