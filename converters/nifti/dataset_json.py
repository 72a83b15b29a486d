"""The `dataset.json` of a Medical Segmentation Decathlon or nnU-Net dataset: label names and channel modalities.

MSD (and nnU-Net v1) write `"labels": {"0": "background", "1": "liver"}` and `"modality": {"0": "CT"}`;
nnU-Net v2 writes `"labels": {"background": 0, "liver": 1}` and `"channel_names": {"0": "CT"}`. Either gives the
class names in label order and the modality of each channel. Region labels (nnU-Net v2's lists of values) have no
one class per value, so such a dataset gets no class names.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastdata.errors import ConvertError
from fastdata.json_text import BadJSON, parse_json

log = logging.getLogger(__name__)

NAME = "dataset.json"
MAX_BYTES = 16 * 2**20  # a dataset.json lists a few hundred cases at most; a larger file is not one
MAX_LABELS = 65536  # label volumes are stored as uint8 or uint16


@dataclass(frozen=True)
class DatasetInfo:
    classes: tuple[str, ...] = ()  # class names in label order (value 0 first); () when unknown
    modalities: dict[int, str] = field(default_factory=dict)  # channel -> modality


def _integer(text: Any) -> int | None:
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    if isinstance(text, str) and text.isascii() and text.isdigit() and len(text) <= 5:
        return int(text)
    return None


def _classes(labels: Any, where: str) -> tuple[str, ...]:
    if labels is None:
        return ()
    if not isinstance(labels, dict) or not labels:
        raise ConvertError(f"{where}: 'labels' must be an object mapping label values to names, got {labels!r:.80}")
    by_value: dict[int, str] = {}
    for key, value in labels.items():
        if _integer(key) is not None and isinstance(value, str):  # MSD: "1": "liver"
            by_value[_integer(key)] = value  # type: ignore[index]
        elif isinstance(value, list):  # nnU-Net v2 regions: "whole tumour": [1, 2, 3]
            log.warning("%s names regions (label %r is the values %s): the dataset gets no class names", where, key,
                        value)
            return ()
        elif _integer(value) is not None:  # nnU-Net v2: "liver": 1
            by_value[_integer(value)] = str(key)  # type: ignore[index]
        else:
            raise ConvertError(f"{where}: label {key!r}: {value!r:.80} is neither a name nor a label value")
    if sorted(by_value) != list(range(len(by_value))) or len(by_value) > MAX_LABELS:
        raise ConvertError(f"{where}: label values {sorted(by_value)[:20]} are not 0, 1, 2, ... with none missing "
                           f"(at most {MAX_LABELS})")
    if len(set(by_value.values())) != len(by_value):
        raise ConvertError(f"{where}: two label values have the same name")
    return tuple(by_value[v] for v in range(len(by_value)))


def _modalities(data: dict[str, Any], where: str) -> dict[int, str]:
    given = data.get("channel_names", data.get("modality"))
    if given is None:
        return {}
    if not isinstance(given, dict) or not all(_integer(k) is not None and isinstance(v, str) for k, v in given.items()):
        raise ConvertError(f"{where}: 'modality'/'channel_names' must map channel numbers to names, got {given!r:.80}")
    return {_integer(k): v for k, v in given.items()}  # type: ignore[misc]


def read_dataset_json(src: Path) -> DatasetInfo:
    """What `SRC/dataset.json` says (an empty DatasetInfo without one); ConvertError, naming the file and what is
    wrong, for one that cannot be read or says something impossible."""
    path = src / NAME
    if not path.is_file():
        return DatasetInfo()
    where = os.fsdecode(path)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise ConvertError(f"{where} is larger than {MAX_BYTES} bytes: not a dataset description")
        data = parse_json(path.read_bytes())
    except (OSError, BadJSON) as exc:
        raise ConvertError(f"cannot read {where}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConvertError(f"{where} holds a {type(data).__name__}, not an object")
    return DatasetInfo(classes=_classes(data.get("labels"), where), modalities=_modalities(data, where))
