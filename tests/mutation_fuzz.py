"""Seeded input-mutation fuzzing of everything fastdata reads from outside: JPEG and PNG files at conversion
and in the loaders, tar shards and their .idx files, Arrow image and token shards, volume shards (with masks too),
image-text shards, tars from other tools (`fastdata index`, whose result `verify` must find clean), DICOM and
NIfTI files, text corpora (plain, JSON Lines, JSON, gzip, Parquet), captions files and labels CSVs, image source
trees of hostile names, manifests, loader states, the answers of an HTTP server to a remote loader
(tests/fuzz_answers.py), and each loader's options given hostile values (`options`: a refusal must name the option).

The oracle: a mutated input is converted, rejected with a reason, or refused with a fastdata error
(a ValueError for a state); any other exception, a crash of the interpreter or a hang (--case-timeout)
is a finding. Findings are printed with their (seed, target, case) and the input is saved under --out.

    python tests/mutation_fuzz.py --cases 900 --seed 0          # what `make test` runs (tests/test_fuzz.py)
    python tests/mutation_fuzz.py --cases 5000 --seed random    # `make fuzz`
"""

from __future__ import annotations

import argparse
import bz2
import csv
import dataclasses
import faulthandler
import functools
import gzip
import io
import json
import logging
import lzma
import os
import random
import shutil
import signal
import struct
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from fuzz_mutators import (  # noqa: E402
    dicom_length,
    dumps,
    jpeg_frame_size,
    metaimage_field,
    mutate_bytes,
    mutate_json,
    nifti_field,
    nrrd_field,
    png_header_size,
    tar_name_byte,
    tar_size_field,
    text_number,
    tfrecord_payload,
)


class Finding(Exception):
    """An outcome the oracle does not allow."""


@dataclass
class Target:
    name: str
    seeds: Callable[[], list[tuple[str, Any]]]  # (label, input) pairs to mutate
    run: Callable[[random.Random, str, Any], str]  # mutate one input, feed it; returns what was done


def _allowed(exc: BaseException, *extra: type) -> bool:
    from fastdata.errors import FastdataError

    return isinstance(exc, (FastdataError, *extra))


OUTCOMES: Counter = Counter()  # (target step, "ran" | "refused: <error type>"): how deep the cases reach


def _expect(fn: Callable[[], Any], *extra: type, step: str = "") -> None:
    """Run `fn`; a fastdata error (or one of `extra`) is an allowed refusal, anything else a finding."""
    try:
        fn()
        OUTCOMES[(step, "ran")] += 1
    except Exception as exc:  # noqa: BLE001 - the oracle sorts every exception
        if not _allowed(exc, *extra):
            raise Finding(f"{type(exc).__name__}: {exc}") from exc
        OUTCOMES[(step, f"refused: {type(exc).__name__}")] += 1


class Context:
    """Valid inputs built once per run: small datasets of every kind and files to mutate."""

    def __init__(self, work: Path) -> None:
        self.work = work
        from conftest_dicom import Phantom, convert_dicom, write_phantom
        from conftest_pet import write_pet
        from conftest_text import TOKENIZER, convert_text
        from helpers import PHOTOS, convert_images, make_image, make_image_tree

        self.tokenizer = TOKENIZER
        src = make_image_tree(work / "img-src", classes=2, per_class=4, size=(64, 48))
        convert_images(src, work / "wds", samples_per_shard=4)
        convert_images(src, work / "arrow", samples_per_shard=4, format="arrow")
        self.jpegs = [("synthetic", (src / "class_0" / "img_0.jpg").read_bytes()),
                      ("progressive", make_image(work / "p.jpg", size=(40, 56), seed=3, progressive=True,
                                                 quality=80).read_bytes()),
                      ("real greyscale", min((p for p in PHOTOS.glob("*.jpg")), key=lambda p: p.stat().st_size)
                       .read_bytes())]
        self.pngs = [("rgb", make_image(work / "a.png", size=(40, 30), seed=4).read_bytes()),
                     ("grey", make_image(work / "g.png", size=(33, 21), seed=5, mode="L").read_bytes())]
        text = work / "text-src"
        text.mkdir()
        (text / "a.txt").write_text("the quick brown fox\njumps over\n\nthe lazy dog\n", encoding="utf-8")
        convert_text(text, work / "tokens", per_line=True, samples_per_shard=2)
        convert_text(text, work / "tokens2", per_line=True, samples_per_shard=3)
        write_phantom(work / "dcm-src" / "s", Phantom(slices=4, rows=12, cols=10), seed=0)
        convert_dicom(work / "dcm-src", work / "volumes", samples_per_shard=1)
        self.dicom_files = (sorted((work / "dcm-src" / "s").iterdir()) + _segmented(work / "dcm-seg" / "s")
                            + _outlined(work / "dcm-rt" / "s")
                            + write_pet(work / "dcm-pet" / "s", PatientSize="1.72", PatientSex="M")
                            + _stacked(work / "dcm-stack" / "s"))
        from conftest_nifti import case, convert_nifti, save

        image, mask = case(0, shape=(12, 10, 6))  # a patient's name in the file names: the privacy oracle's
        self.nifti_files = [save(work / "nii-src" / "imagesTr" / "Smith_John.nii", image),
                            save(work / "nii-src" / "labelsTr" / "Smith_John.nii.gz", mask)]
        structures = work / "nii-ts" / "Smith_John"  # TotalSegmentator's layout: one binary mask per structure
        self.nifti_files += [save(structures / "ct.nii.gz", image),
                             save(structures / "segmentations" / "a.nii.gz", (mask == 1).astype(mask.dtype))]
        save(structures / "segmentations" / "b.nii.gz", (mask == 2).astype(mask.dtype))
        (work / "nii-src" / "dataset.json").write_text('{"labels": {"0": "bg", "1": "a", "2": "b"}}')
        convert_nifti(work / "nii-src", work / "masked-volumes", samples_per_shard=1)
        self.nifti_files += _metaimages(work / "mhd-src" / "cases", image, mask)
        self.nifti_files += _nrrds(work / "nrrd-src" / "cases", image, mask)
        self.nifti_files += _pairs_and_mghs(work / "pair-src" / "cases", image, mask)
        self.nifti_files += _mincs(work / "minc-src" / "cases", image, mask)
        self.nifti_files += _afnis(work / "afni-src" / "cases", image, mask)
        self.nifti_files += _parrecs(work / "parrec-src" / "cases")
        self.nifti_files += _petct(work / "petct-src" / "cases", image, mask)
        self.texts = [("x.jsonl", b'{"text": "one doc"}\n{"text": "two"}\n'),
                      ("x.txt", "plain text \u2028 with a separator\n%\nrecord\n".encode()),
                      ("x.json", b'[{"text": "a"}, {"text": "b"}]'),
                      ("c4.json", b'{"text": "one", "url": "u"}\n\n{"text": "two"}\n{"text": 3}\n'),
                      ("wiki.valid.raw", " \n = T\u00e9 = \n \n text @-@ here \n = = S = = \n more \n = U = \n u \n"
                       .encode()),
                      ("x.jsonl.gz", _gzip(b'{"text": "zipped"}\n' * 20)),
                      ("x.parquet", _parquet({"text": ["one doc", "", "three " * 50, "four"]})),
                      ("x.arrow", _arrow_stream({"text": ["one doc", "", "three " * 50, "four"], "id": [1, 2, 3, 4]})),
                      ("labeled/x.arrow", _arrow_stream(_labeled_text())),
                      ("labeled/x.parquet", _parquet(_labeled_text())),
                      ("x.bin", _token_shard([101, 7592, 102, 101, 2088, 101, 5, 6, 7])),
                      ("labeled/x.jsonl", b'{"text": "good", "label": "pos"}\n{"text": "bad", "label": "neg"}\n'),
                      ("labeled/x.csv", b"text,label\ngood,1\nbad,0\n"),
                      ("ids/x.parquet", _parquet({"input_ids": [[101, 7592, 102], None, [], [101, 30521, 102] * 40]})),
                      ("ids/x.arrow", _arrow_stream({"input_ids": [[101, 7592, 102], [5] * 7, [101, 102], [0]]})),
                      ("ids/x.jsonl", b'{"input_ids": [101, 7592, 102]}\n{"input_ids": [5, 6]}\n{"ids": [1]}\n')]
        from conftest_adopt import encoded, raw_tar
        from conftest_pairs import convert_pairs, make_pair_tree

        make_pair_tree(work / "pair-src", 6, captions=2)
        convert_pairs(work / "pair-src", work / "pairs", tokenizer=str(TOKENIZER), samples_per_shard=3)
        jpg = encoded("JPEG", size=(40, 32))
        self.foreign = {
            "labeled": raw_tar(work / "labeled.tar", [m for i in range(4) for m in
                                                      ((f"s{i}.jpg", jpg), (f"s{i}.cls", str(i % 2).encode()))]),
            "captioned": raw_tar(work / "captioned.tar", [m for i in range(4) for m in
                                                          ((f"s{i}.jpg", jpg), (f"s{i}.txt", f"photo {i}".encode()),
                                                           (f"s{i}.json", b'{"w": 40}'))]),
            "json-labeled": raw_tar(work / "json-labeled.tar", [m for i in range(4) for m in (
                (f"s{i}.jpg", jpg), (f"s{i}.json", f'{{"file": "s{i}.jpg", "label": {i % 2}}}'.encode()))]),
            "json-named": raw_tar(work / "json-named.tar", [m for i in range(4) for m in (
                (f"s{i}.jpg", jpg), (f"s{i}.json", f'{{"class": "{("cat", "dog")[i % 2]}"}}'.encode()))]),
            # adopted with --multi-label: a list of classes a sample, indices and names
            "json-listed": raw_tar(work / "json-listed.tar", [m for i in range(4) for m in (
                (f"s{i}.jpg", jpg), (f"s{i}.json", json.dumps({"labels": [0, 2][:i % 3]}).encode()))]),
            "json-tagged": raw_tar(work / "json-tagged.tar", [m for i in range(4) for m in (
                (f"s{i}.jpg", jpg), (f"s{i}.json", json.dumps({"tags": ["haze", "primary", "water"][i % 2:i + 1]})
                                     .encode()))]),
        }
        self.tables = [  # captions files of every format and a labels CSV, as users write them
            ("captions.csv", b"file,caption\nimg_000.jpg,a cat on a mat\nimg_001.jpg,\"two, dogs\"\n"),
            ("captions.tsv", b"file\tcaption\nimg_000.jpg\ta cat\n"),
            ("captions.jsonl", b'{"file": "img_000.jpg", "caption": "a cat"}\n{"file": "b.jpg", "caption": "x"}\n'),
            ("captions.json", json.dumps({"images": [{"id": 1, "file_name": "img_000.jpg"}, {"id": 2, "file_name":
                                         "b.jpg"}], "annotations": [{"image_id": 1, "caption": "a cat"},
                                                                    {"image_id": 2, "caption": "b"}]}).encode()),
            ("captions.parquet", _parquet({"file": ["img_000.jpg", "b.jpg"], "caption": ["a cat", "b"]})),
            ("labels.csv", "filename,class\nimg_0.jpg,cat\nimg_1.jpg,chien \u00e9\n".encode()),
            ("LOC_val_solution.csv", b"ImageId,PredictionString\nimg_0,n01 1 2 3 4 n01 5 6 7 8\nimg_1,n02 1 2 3 4\n"),
            ("train_list.txt", b"train/a.jpg 0\n/b/my photo.jpg 1\n"),
            # --multi-label tables: ChestX-ray14's findings joined by bars, Planet's tags by spaces, one-hot columns
            ("Data_Entry_2017.csv", b"Image Index,Finding Labels,Patient ID\n00000001_000.png,Effusion|Mass,1\n"
                                    b"00000002_000.png,No Finding,2\n00000003_000.png,Mass|Mass,3\n"),
            ("train_v2.csv", b"image_name,tags\ntrain_0,haze primary\ntrain_1,clear primary water\n"),
            ("multi_hot.csv", b"image,MEL,NV,BCC\na,1.0,0.0,1.0\nb,0,0,0\nc,0,1,0\n"),
            # HAM10000's metadata, its file and label columns named (--image-field image_id --label-field dx)
            ("HAM10000_metadata.csv", b"lesion_id,image_id,dx,dx_type,age,sex,localization\n"
                                      b"HAM_0000118,ISIC_0027419,bkl,histo,80.0,male,scalp\n"
                                      b"HAM_0002730,ISIC_0031633,nv,histo,75.0,male,ear\n"),
            # a long table (a row an image and class) and Open Images' image-level labels (Confidence 1 or 0)
            ("long_labels.csv", b"filename,label\na.jpg,cat\nb.jpg,dog\na.jpg,dog\n"),
            ("oidv6-train-annotations-human-imagelabels.csv", b"ImageID,Source,LabelName,Confidence\n"
                                                              b"0002,verification,/m/014sv8,1\n0002,verification,"
                                                              b"/m/01g317,0\n0003,verification,/m/05s2s,1\n"),
            # --classes files: Open Images' class descriptions (codes of the source's classes named, a shared name),
            # ImageNet's synset mapping (`code name, name`), Places365's categories (`name id`)
            ("oidv7-class-descriptions.csv", b"LabelName,DisplayName\n/m/014sv8,Human eye\n/m/01g317,Person\n"
                                             b'/m/05s2s,"Plant, green"\n/m/0zzzz,Person\n'),
            ("LOC_synset_mapping.txt", b"n01440764 tench, Tinca tinca\nn01443537 goldfish\n/m/05s2s Plant\n"),
            ("categories_places365.txt", b"/a/airfield 0\n/a/alley 2\n/b/bakery/shop 1\n"),
            # CelebA's attributes: a count line, a names line, rows of 1 and -1 split by runs of spaces
            ("list_attr_celeba.txt", b"3\n5_o_Clock_Shadow Arched_Eyebrows Bald \n000001.jpg -1  1  1\n"
                                     b"000002.jpg  1 -1 -1\n000003.jpg -1 -1 -1\n"),
            ("dataset_coco.json", json.dumps({"dataset": "coco", "images": [
                {"filepath": "train2014", "filename": "img_000.jpg", "split": "restval", "sentences": [
                    {"raw": "a cat", "tokens": ["a", "cat"]}, {"raw": "two cats"}]},
                {"filename": "b.jpg", "split": "test", "sentences": []}]}).encode()),
        ]
        self.image_tables = [(name, _image_table(name, [data for _, data in self.jpegs + self.pngs]))
                             for name in ("train-00000-of-00001.parquet", "train.arrow", "captions/train.parquet",
                                          "captions/train.arrow", "train-00000-of-00001", "data.tfrecord.gz",
                                          VOC_RECORDS, LSUN_DATA, *ARRAY_FILES)]
        self.case_dir = work / "case"
        self._server: Any = None
        self._local: dict[str, list] = {}

    def server(self) -> Any:
        """An HTTP server of the work folder (started on first use), for the remote target."""
        if self._server is None:
            from http_server import FileServer

            self._server = FileServer(self.work).__enter__()
        return self._server

    def local_epoch(self, label: str) -> list:
        if label not in self._local:
            self._local[label] = _remote_epoch(self.work / label, label)
        return self._local[label]

    def close(self) -> None:
        if self._server is not None:
            self._server.__exit__(None, None, None)

    def fresh(self, name: str) -> Path:
        """A private copy of dataset `name` for one case (the mutation must not leak into the next)."""
        shutil.rmtree(self.case_dir, ignore_errors=True)
        shutil.copytree(self.work / name, self.case_dir)
        return self.case_dir


def _labeled_text() -> Any:
    """A text classification table as the Hub ships it: `text`, and a `label` with a ClassLabel."""
    import pyarrow as pa
    from helpers import with_features

    features = {"text": {"_type": "Value"}, "label": {"names": ["neg", "pos"], "_type": "ClassLabel"}}
    table = pa.table({"text": ["good", "bad", "so so", "fine"], "label": pa.array([1, 0, -1, 1], pa.int64())})
    return with_features(table, features)


def _parquet(columns: Any) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(columns if isinstance(columns, pa.Table) else pa.table(columns), sink)
    return sink.getvalue().to_pybytes()


def _token_shard(tokens: list[int]) -> bytes:
    """A token shard in llm.c's layout: 256 int32 (magic 20240520, version 1, count), then uint16 tokens."""
    import numpy as np

    header = np.zeros(256, dtype="<i4")
    header[:3] = (20240520, 1, len(tokens))
    return header.tobytes() + np.asarray(tokens, dtype="<u2").tobytes()


def _arrow_stream(columns: Any) -> bytes:
    """`columns` (a dict of lists, or a table) as the Arrow IPC stream `save_to_disk` writes, two rows a batch."""
    import pyarrow as pa

    table = columns if isinstance(columns, pa.Table) else pa.table(columns)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=2)
    return sink.getvalue().to_pybytes()


def _image_table(name: str, images: list[bytes]) -> bytes:
    """A Hugging Face table of `images` (Parquet, or the Arrow stream `save_to_disk` writes) with a ClassLabel."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from helpers import with_features

    features = {"image": {"_type": "Image"}, "label": {"names": ["a", "b"], "_type": "ClassLabel"}}
    table = pa.table({"image": [{"bytes": d, "path": f"{i}.jpg"} for i, d in enumerate(images)],
                      "label": pa.array([i % 2 for i in range(len(images))], pa.int64())})
    if name.startswith("captions/"):  # Flickr30k's columns: a list of captions and a split
        table = table.drop_columns(["label"]).append_column(
            "caption", pa.array([[f"caption {i}", ""] for i in range(len(images))])).append_column(
            "split", pa.array(["train", "val"] * (len(images) // 2) + ["test"] * (len(images) % 2)))
        features = {"image": {"_type": "Image"}}
    table = with_features(table, features)
    if name.endswith(".arrow"):
        return _arrow_stream(table)
    if name in ARRAY_FILES:
        return _array_file(name, images)
    if name == LSUN_DATA:
        return _lmdb_data(images)
    if "." not in name or ".tfrecord" in name:  # TensorFlow's ImageNet records, or TFDS's (gzip-compressed here)
        data = _tfrecords(images, tfds=name.endswith(".gz"), voc=name == VOC_RECORDS)
        return _gzip(data) if name.endswith(".gz") else data
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, row_group_size=2)
    return sink.getvalue().to_pybytes()


LSUN_DATA = "bedroom_train_lmdb/data.mdb"  # an LMDB environment of LSUN's, its keys hex ids, its values images


def _lmdb_data(images: list[bytes]) -> bytes:
    """The data.mdb of an LMDB environment holding `images` (written by the lmdb package, as LSUN's are)."""
    import tempfile

    import lmdb

    with tempfile.TemporaryDirectory() as folder:
        env = lmdb.open(folder, map_size=1 << 26)
        with env.begin(write=True) as txn:
            for i, data in enumerate(images):
                txn.put(f"{i:040x}".encode(), data)
        env.close()
        return (Path(folder) / "data.mdb").read_bytes()


PCAM_X, PCAM_Y = "camelyonpatch_level_2_split_train_x.h5", "camelyonpatch_level_2_split_valid_y.h5"
QMNIST_Y = "qmnist-train-labels-idx2-int.xz"  # QMNIST's labels, N x 8 big-endian integers, as the .xz it downloads
NPZ = "pathmnist.npz"  # MedMNIST's: train_images [N, 28, 28, 3] and train_labels [N, 1], as np.savez stores them
EMNIST_MAP, K49_MAP = "emnist-letters-mapping.txt", "k49_classmap.csv"  # class maps, read with the images they name
ARRAY_FILES = ("data_batch_1", "train-images-idx3-ubyte", "train.csv", "train_32x32.mat", "train_X.bin", PCAM_X,
               PCAM_Y, QMNIST_Y, NPZ, "usps.bz2", "semeion.data", EMNIST_MAP, K49_MAP)  # torchvision's CIFAR, MNIST,
# SVHN, STL-10, PCAM, QMNIST, USPS, SEMEION; pixel tables; MedMNIST's .npz; EMNIST's and Kuzushiji-49's class maps


def _array_file(name: str, images: list[bytes]) -> bytes:
    """A CIFAR batch (a pickle), an IDX images file, a table of pixels, an SVHN MATLAB file or an STL-10 images file
    of `images` made 32x32 RGB, 28x28 or 16x16 grey, or 96x96 RGB."""
    import io
    import pickle

    import numpy as np
    from PIL import Image

    def pixels(data: bytes, mode: str, side: int) -> np.ndarray:
        return np.asarray(Image.open(io.BytesIO(data)).convert(mode).resize((side, side)))

    if name == "data_batch_1":
        rows = np.stack([pixels(d, "RGB", 32).transpose(2, 0, 1).reshape(-1) for d in images])
        return pickle.dumps({"batch_label": "batch 1", "labels": [i % 2 for i in range(len(images))], "data": rows},
                            protocol=2)
    if name == "train.csv":  # Kaggle's Digit Recognizer: label,pixel0,...
        rows = [",".join(map(str, [i % 2, *pixels(d, "L", 16).ravel()])) for i, d in enumerate(images)]
        return ("label," + ",".join(f"pixel{i}" for i in range(256)) + "\n" + "\n".join(rows) + "\n").encode()
    if name == "train_32x32.mat":  # X [32, 32, 3, N], y [N, 1] with 0 written as 10
        from scipy.io import savemat

        buf = io.BytesIO()
        savemat(buf, {"X": np.stack([pixels(d, "RGB", 32) for d in images], axis=3),
                      "y": np.array([[10 - i % 2] for i in range(len(images))], np.uint8)})
        return buf.getvalue()
    if name == "train_X.bin":  # each image's planes, each plane column after column
        return np.stack([pixels(d, "RGB", 96).transpose(2, 1, 0) for d in images]).tobytes()
    if name in (PCAM_X, PCAM_Y):  # x [N, 96, 96, 3] in gzip-compressed chunks of an image; y [N, 1, 1, 1]
        return _pcam_file(name == PCAM_X, np.stack([pixels(d, "RGB", 96) for d in images]))
    if name == NPZ:
        buf = io.BytesIO()
        np.savez(buf, train_images=np.stack([pixels(d, "RGB", 28) for d in images]),
                 train_labels=(np.arange(len(images)) % 3).astype(np.uint8).reshape(-1, 1))
        return buf.getvalue()
    if name == "usps.bz2":  # LIBSVM lines: the label 1 ... 10, then INDEX:VALUE of each pixel, -1 ... 1
        return bz2.compress(b"".join(f"{1 + i % 10} ".encode() + b" ".join(
            f"{j}:{v / 127.5 - 1:.4f}".encode() for j, v in enumerate(pixels(d, "L", 16).ravel(), 1)) + b"\n"
            for i, d in enumerate(images)))
    if name == "semeion.data":  # 256 pixels of 0 or 1, then ten digit flags
        return b"".join(b" ".join([f"{int(v > 127)}.0000".encode() for v in pixels(d, "L", 16).ravel()]
                                  + [b"1" if k == i % 10 else b"0" for k in range(10)]) + b"\n"
                        for i, d in enumerate(images))
    if name == EMNIST_MAP:  # `ID UPPER LOWER`, ids 1 ... 26
        return "".join(f"{i} {64 + i} {96 + i}\n" for i in range(1, 27)).encode()
    if name == K49_MAP:
        rows = "".join(f"{i},U+{ord(c):04X},{c}\n" for i, c in enumerate("あいう"))
        return ("index,codepoint,char\n" + rows).encode()
    if name == QMNIST_Y:  # the class, then NIST's series, writer, index, code, global index, duplicate, unused
        n = len(images)
        rows = np.stack([np.arange(n) % 2, np.full(n, 4), 2100 + np.arange(n), np.arange(n), 48 + np.arange(n) % 2,
                         300000 + np.arange(n), np.zeros(n), np.zeros(n)], axis=1)
        return lzma.compress(bytes([0, 0, 0x0C, 2]) + struct.pack(">2I", *rows.shape) + rows.astype(">i4").tobytes())
    grey = np.stack([pixels(d, "L", 28) for d in images])
    return bytes([0, 0, 8, 3]) + struct.pack(">3I", *grey.shape) + grey.tobytes()


def _pcam_file(images: bool, pixels: Any) -> bytes:
    """A PCam `_x.h5` of `pixels` [N, 96, 96, 3], or the `_y.h5` of their labels (0, 1, 0, ...), as h5py writes them."""
    import io

    import h5py
    import numpy as np

    buf = io.BytesIO()
    with h5py.File(buf, "w") as f:
        if images:
            f.create_dataset("x", data=pixels, chunks=(1, *pixels.shape[1:]), compression="gzip")
        else:
            f.create_dataset("y", data=(np.arange(len(pixels)) % 2).astype(np.uint8).reshape(-1, 1, 1, 1))
    return buf.getvalue()


def _array_partners(src: Path, name: str, count: int) -> None:
    """What an array file is read with: CIFAR's meta file, the IDX or STL-10 labels of `count` images and STL-10's
    class names (a table of pixels, an SVHN file: nothing)."""
    import pickle

    if name == "data_batch_1":
        (src / "batches.meta").write_bytes(pickle.dumps({"label_names": ["a", "b"]}, protocol=2))
    elif name in (PCAM_X, PCAM_Y):
        import numpy as np

        partner = name.replace("_x.h5", "_y.h5") if name == PCAM_X else name.replace("_y.h5", "_x.h5")
        noise = np.random.default_rng(0).integers(0, 256, (count, 96, 96, 3), dtype=np.uint8)
        (src / partner).write_bytes(_pcam_file(name != PCAM_X, noise))
    elif name == "train_X.bin":
        (src / "train_y.bin").write_bytes(bytes(1 + i % 2 for i in range(count)))
        (src / "class_names.txt").write_text("a\nb\n")
    elif name == QMNIST_Y:
        import numpy as np

        noise = np.random.default_rng(0).integers(0, 256, (count, 28, 28), dtype=np.uint8)
        (src / "qmnist-train-images-idx3-ubyte").write_bytes(bytes([0, 0, 8, 3]) + struct.pack(">3I", *noise.shape)
                                                             + noise.tobytes())
    elif name == EMNIST_MAP:
        import numpy as np

        noise = np.random.default_rng(0).integers(0, 256, (count, 28, 28), dtype=np.uint8)
        (src / "emnist-letters-train-images-idx3-ubyte").write_bytes(bytes([0, 0, 8, 3]) + struct.pack(
            ">3I", *noise.shape) + noise.tobytes())
        (src / "emnist-letters-train-labels-idx1-ubyte").write_bytes(bytes([0, 0, 8, 1]) + struct.pack(">I", count)
                                                                     + bytes(1 + i % 26 for i in range(count)))
    elif name == K49_MAP:
        import numpy as np

        np.savez(src / "k49-train-imgs.npz", np.random.default_rng(0).integers(0, 256, (count, 28, 28), np.uint8))
        np.savez(src / "k49-train-labels.npz", np.arange(count, dtype=np.uint8) % 3)
    elif name == "train-images-idx3-ubyte":
        (src / "train-labels-idx1-ubyte").write_bytes(bytes([0, 0, 8, 1]) + struct.pack(">I", count)
                                                      + bytes(i % 2 for i in range(count)))


VOC_RECORDS = "voc-train.tfrecord-00000-of-00001"  # TensorFlow Datasets' VOC: classes listed, read with --multi-label


def _tfrecords(images: list[bytes], *, tfds: bool, voc: bool = False) -> bytes:
    """A TFRecord file of `images`, written by the tfrecord package: as TensorFlow Datasets writes them (image,
    label; VOC's image and labels, a list of classes), or as TensorFlow's ImageNet script does (image/encoded,
    image/class/synset, image/class/label)."""
    import tempfile

    from tfrecord import TFRecordWriter

    with tempfile.TemporaryDirectory() as tmp:
        writer = TFRecordWriter(f"{tmp}/f")  # a path: the writer opens it
        for i, data in enumerate(images):
            writer.write({"image": (data, "byte"), "labels": ([i % 3, 4][:i % 3], "int"),
                          "objects/label": ([4, i % 3, 4], "int")} if voc else
                         {"image": (data, "byte"), "label": (i % 2, "int")} if tfds else {
                "image/encoded": (data, "byte"), "image/class/synset": (f"n0{i % 2}".encode(), "byte"),
                "image/class/label": (i % 2 + 1, "int")})
        writer.close()
        return Path(f"{tmp}/f").read_bytes()


def _gzip(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, mtime=0)


def _fix_size(ds: Path, shard: str, probability: float, rng: random.Random) -> None:
    """Make the manifest agree with the mutated shard's size (mostly), so the readers get past that check."""
    if rng.random() >= probability:
        return
    m = json.loads((ds / "manifest.json").read_text())
    for split in m["splits"].values():
        for entry in split["shards"]:
            if entry["name"] == shard:
                entry["bytes"] = (ds / shard).stat().st_size
    (ds / "manifest.json").write_text(json.dumps(m))


def _epoch(loader: Any, limit: int = 50) -> None:
    for i, _ in enumerate(loader):
        if i >= limit:
            break


# -- targets --------------------------------------------------------------------------------------------

def _image_bytes(ctx: Context, rng: random.Random, label: str, data: bytes, extra: tuple) -> str:
    from converters.images import ImageOptions
    from converters.images.encode import process_image
    from converters.sample import Rejection, Sample, WorkItem
    from fastdata.images.decode import check_header, decode_eval, decode_train
    from fastdata.images.geometry import random_resized_crop_box
    from fastdata.images.reader import RawSample
    from fastdata.verify import decode_strictly

    data, what = mutate_bytes(rng, data, extra)
    path = ctx.work / "case.img"
    path.write_bytes(data)
    result = process_image(WorkItem("train", "case.img", str(path), 0, 0), opts=ImageOptions())
    if not isinstance(result, Sample | Rejection):
        raise Finding(f"the converter returned {type(result).__name__}")
    OUTCOMES[("image convert", type(result).__name__)] += 1
    decode_strictly(data)  # verify --decode: returns its finding, never raises
    raw = RawSample(data=data, label=0, key="k", shard=Path("case.tar"))

    def load() -> None:
        height, width = check_header(raw, 89_478_485)
        box = random_resized_crop_box([rng.random() for _ in range(40)], height, width,
                                      scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3))
        decode_train(raw, box, height, width, 32, flip=rng.random() < 0.5)
        decode_eval(raw, resize_short=36, size=32)

    _expect(load, step="image decode")
    return f"{label}: {what}"


def _tar_shard(ctx: Context, rng: random.Random, label: str, _: Any) -> str:
    import fastdata
    from fastdata.verify import verify_dataset

    ds = ctx.fresh("wds")
    shard, member = ("train-000000.tar", "tar") if label == "tar" else ("train-000001.idx", "idx")
    extra = (tar_size_field, text_number) if member == "tar" else (text_number,)
    data, what = mutate_bytes(rng, (ds / shard).read_bytes(), extra)
    (ds / shard).write_bytes(data)
    _fix_size(ds, "train-000000.tar", 0.8, rng)
    _expect(lambda: verify_dataset(ds, decode=True), step=f"{member} verify")
    backend = "dali" if rng.random() < 0.1 else "kornia"
    for train in (True, False):
        _expect(lambda train=train: _epoch(fastdata.loader(ds, batch_size=2, image_size=32, train=train,
                                                           backend=backend, device="cpu", num_threads=1)),
                step=f"{member} {backend} epoch")
    return f"{shard} ({backend}): {what}"


def _arrow_shard(ctx: Context, rng: random.Random, label: str, _: Any) -> str:
    import fastdata
    from fastdata.verify import verify_dataset

    ds = ctx.fresh(label)
    shard = sorted(p.name for p in ds.glob("*.arrow"))[0]
    data, what = mutate_bytes(rng, (ds / shard).read_bytes())
    (ds / shard).write_bytes(data)
    _fix_size(ds, shard, 0.8, rng)
    _expect(lambda: verify_dataset(ds, decode=True), step=f"{label} verify")
    if label == "arrow":
        _expect(lambda: _epoch(fastdata.loader(ds, batch_size=2, image_size=32, backend="kornia", device="cpu",
                                               num_threads=1)), step="arrow images epoch")
    else:
        _expect(lambda: _epoch(fastdata.loader(ds, max_tokens=64)), step="arrow tokens epoch")
    return f"{label}/{shard}: {what}"


def _pairs_shard(ctx: Context, rng: random.Random, label: str, _: Any) -> str:
    import fastdata
    from fastdata.verify import verify_dataset

    ds = ctx.fresh("pairs")
    shard = "train-000000.tar"
    data, what = mutate_bytes(rng, (ds / shard).read_bytes(), (tar_size_field, text_number))
    (ds / shard).write_bytes(data)
    _fix_size(ds, shard, 0.8, rng)
    _expect(lambda: verify_dataset(ds), step="pairs verify")
    for train in (True, False):
        _expect(lambda train=train: _epoch(fastdata.loader(ds, batch_size=2, image_size=32, train=train,
                                                           backend="kornia", device="cpu", num_threads=1)),
                step="pairs epoch")
    return f"pairs/{shard}: {what}"


def _foreign_tar(ctx: Context, rng: random.Random, label: str, tar: Path) -> str:
    """A tar from another tool, mutated, then `fastdata index`: what it indexes, `verify` must find clean."""
    import fastdata
    from converters.adopt import AdoptOptions, adopt
    from fastdata.verify import verify_dataset

    shutil.rmtree(ctx.case_dir, ignore_errors=True)
    ctx.case_dir.mkdir()
    data, what = mutate_bytes(rng, tar.read_bytes(), (tar_size_field, tar_name_byte, text_number))
    (ctx.case_dir / "a.tar").write_bytes(data)
    try:
        listed = {"json-listed": {"multi_label": True}, "json-tagged": {"multi_label": True, "label_field": "tags"}}
        result = adopt(ctx.case_dir, options=AdoptOptions(jobs=1, **listed.get(label, {})))
    except Exception as exc:  # noqa: BLE001 - the oracle sorts every exception
        if not _allowed(exc) or "unexpected error" in str(exc):  # every tar rejected, one by the catch-all
            raise Finding(f"index: {type(exc).__name__}: {exc}") from exc
        OUTCOMES[("adopt", f"refused: {type(exc).__name__}")] += 1
        return f"{label}: {what} (refused)"
    OUTCOMES[("adopt", "ran")] += 1
    _no_unexpected([r["reason"] for r in result.rejected])
    problems = verify_dataset(ctx.case_dir)
    if problems:
        raise Finding(f"verify disagrees with what index accepted: {problems[:3]}")
    _expect(lambda: _epoch(fastdata.loader(ctx.case_dir, batch_size=2, image_size=32, train=False,
                                           backend="kornia", device="cpu", num_threads=1)), step="adopted epoch")
    return f"{label}: {what}"


FOLDER_NAMES = (b"ok", b"caf\xe9", b"red\x1b[31m", b"tab\tname", b"with space", "\u00fc".encode(), "u\u0308".encode(),
                b"x" * 200, b"train", b"val", b".hidden", b"-x", b"a\nb", "\u202eevil".encode())
FILE_NAMES = (b"a.jpg", b"A.JPG", b"b\xe9.jpg", b"c\x1b.jpg", b"d .jpg", b"e.jpeg.txt", b"f", b".g.jpg",
              b"h" * 240 + b".jpg", b"i.png", b"j\n.jpg", b"k.jpg.", b"l.webp")


def _loose_labels(ctx: Context, rng: random.Random, src: Path, made: list[bytes]) -> Path:
    """A labels CSV of val's loose images (`--labels val=FILE`): rows naming them whole, without extension, or
    not at all, and a row naming no file; classes of train's folders or none of them; plain or as Kaggle's boxes;
    its bytes sometimes mutated."""
    val = os.path.join(os.fsencode(str(src)), b"val", b"")
    names = [os.fsdecode(p[len(val):]) for p in made if p.startswith(val)] + ["missing.jpg"]
    classes = [os.fsdecode(p.split(b"/")[-2]) for p in made if not p.startswith(val)] + ["n09"]
    boxes = rng.random() < 0.5
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["ImageId", "PredictionString"] if boxes else ["filename", "class"])
    for name in names:
        if rng.random() < 0.8:
            name = name.rsplit(".", 1)[0] if rng.random() < 0.3 else name
            cls = rng.choice(classes)
            writer.writerow([name, f"{cls} 1 2 3 4 {rng.choice((cls, cls, 'n08'))} 5 6 7 8" if boxes else cls])
    data = out.getvalue().encode("utf-8", "surrogateescape")
    if rng.random() < 0.3:
        data, _ = mutate_bytes(rng, data, (text_number,))
    path = ctx.work / "case-tree-labels.csv"
    path.write_bytes(data)
    return path


def _tree(ctx: Context, rng: random.Random, layout: str, _: Any) -> str:
    """A source tree of hostile names (bytes that are not UTF-8, control characters, long names, split names as
    classes, hidden entries, one name composed and decomposed) holding images or garbage, converted whole. The
    oracle: a conversion or a fastdata error; no rejection by the catch-all; a manifest of UTF-8 JSON whose classes
    are printable text, no two the same name in Unicode normalisations; every visible
    file a sample or a rejection (nothing lost); and an epoch of the result."""
    from helpers import convert_images

    import fastdata
    from converters.class_folders import has_control_characters, same_name

    src, dst = ctx.work / "case-tree", ctx.work / "case-tree-out"
    for folder in (src, dst):
        shutil.rmtree(folder, ignore_errors=True)
    jpg, png = ctx.jpegs[0][1], ctx.pngs[0][1]
    top = [b"train", b"val"] if layout.startswith("split/") else [b"train", b"Validation"] \
        if layout == "class/split" else [b""]
    files = 0
    made = []
    for split in top:
        loose = layout == "split/loose" and split == b"val"  # Kaggle's ImageNet: val's images loose, a labels CSV
        for folder in rng.sample(FOLDER_NAMES, rng.randint(1, 4)) if layout not in ("flat", "named") and not loose \
                else [b""]:
            for name in rng.sample(FILE_NAMES, rng.randint(1, 4)):
                parts = (folder, split, name) if layout == "class/split" else (split, folder, name)
                path = os.path.join(os.fsencode(str(src)), *[p for p in parts if p])
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as f:
                    f.write(rng.choice((jpg, jpg, png, b"not an image", b"")))
                made.append(path)
                hidden = any(part.startswith(b".") for part in (split, folder, name))
                files += not hidden
    config = {"labels": f"val={_loose_labels(ctx, rng, src, made)}"} if layout == "split/loose" else {}
    if layout == "named":  # classes from the hostile names (--label-pattern)
        config = {"label_pattern": rng.choice((r"^(.)", r"^(.+)\.", r"(\w*)", r"(?P<label>[^.]+)\.jpe?g$"))}
    try:
        result = convert_images(Path(os.fsdecode(os.fsencode(str(src)))), dst, **config)
    except Exception as exc:  # noqa: BLE001 - the oracle sorts every exception
        if not _allowed(exc) or "unexpected error" in str(exc):
            raise Finding(f"convert: {type(exc).__name__}: {exc}") from exc
        OUTCOMES[("tree convert", f"refused: {type(exc).__name__}")] += 1
        return f"{layout}: {len(made)} files (refused)"
    OUTCOMES[("tree convert", "ran")] += 1
    _no_unexpected([r["reason"] for r in result.rejected])
    doc = json.loads((dst / "manifest.json").read_bytes().decode("utf-8"))
    if any(has_control_characters(c) or any("\ud800" <= ch <= "\udfff" for ch in c) for c in doc["classes"]):
        raise Finding(f"a class name with control characters or bytes that are not UTF-8: {doc['classes']!r}")
    if len({same_name(c) for c in doc["classes"]}) != len(doc["classes"]):
        raise Finding(f"class names that differ only in Unicode normalisation: {[ascii(c) for c in doc['classes']]}")
    unlisted = sum(r["reason"].startswith("listed in") for r in result.rejected)  # a row naming no file
    if result.manifest.num_samples + len(result.rejected) - unlisted != files:
        raise Finding(f"{files} visible files, {result.manifest.num_samples} samples and {len(result.rejected)} "
                      "rejections: something was lost or counted twice")
    if result.manifest.num_samples:
        _expect(lambda: _epoch(fastdata.loader(dst, batch_size=1, image_size=32, train=False, backend="kornia",
                                               device="cpu", num_threads=1, split=next(iter(doc["splits"])))),
                step="tree epoch")
    return f"{layout}: {len(made)} files"


def _volume_shard(ctx: Context, rng: random.Random, label: str, _: Any) -> str:
    import fastdata

    ds = ctx.fresh("volumes" if label == "volume" else "masked-volumes")
    shard = "train-000000.tar"
    data, what = mutate_bytes(rng, (ds / shard).read_bytes(), (tar_size_field,))
    (ds / shard).write_bytes(data)
    _fix_size(ds, shard, 0.8, rng)
    for train in (True, False):
        _expect(lambda train=train: _epoch(fastdata.loader(ds, batch_size=1, patch_size=(4, 8, 8), train=train,
                                               num_workers=1)), step="volume epoch")
    return f"{label}/{shard}: {what}"


ORIENTATIONS = (None, "RAS", "PIR")  # the volume kinds convert as stored, or reoriented (flipped; permuted)
OVERLAPS = ("reject", "later")  # --overlap: what a voxel two structures of a mask claim becomes


def _converted(kind_name: str, opts: Any, src: Path, outcome: str) -> list[str]:
    """Discover `src` as `kind_name` (pseudonymized), convert every item in this process, and return what the
    conversion would write: each rejection's reason and source (apart: a reason must start as it does), each
    sample's json."""
    from converters import get_kind
    from converters.sample import Rejection, Sample

    kind = get_kind(kind_name)
    discovery, _ = kind.pseudonymize(kind.discover(src, options=opts), opts)
    process = kind.processor(opts)
    written = [r.reason for r in discovery.rejected] + [r.source for r in discovery.rejected]
    for items in discovery.splits.values():
        for item in items:
            result = process(item)
            if not isinstance(result, Sample | Rejection):
                raise Finding(f"the converter returned {type(result).__name__}")
            OUTCOMES[(outcome, type(result).__name__)] += 1
            written.append(result.reason if isinstance(result, Rejection) else result.members["json"].decode())
            if isinstance(result, Sample):
                _finite_volumes(result)
    return written


def _finite_volumes(sample: Any) -> None:
    """A Finding when a volume written is not finite: a float beyond float32 stored as infinity (found by the nifti
    target) is garbage no reason recorded."""
    import numpy as np

    for name in ("npy", "label.npy"):
        if name in sample.members:
            arr = np.load(io.BytesIO(sample.members[name]), allow_pickle=False)
            if arr.dtype.kind == "f" and not np.isfinite(arr).all():
                raise Finding(f"non-finite values written in {name} ({int((~np.isfinite(arr)).sum())} of {arr.size})")


def _metaimages(folder: Path, image: Any, mask: Any) -> list[Path]:
    """The image and its mask as MetaImage files written by SimpleITK (LUNA16's .mhd + .raw, PROMISE12's mask beside
    its image, and an .mha), each header, data file and .mha a file to mutate."""
    import SimpleITK as sitk

    folder.mkdir(parents=True, exist_ok=True)
    for name, voxels in (("Smith_John.mhd", image), ("Smith_John_segmentation.mhd", mask), ("Doe_Jane.mha", image)):
        written = sitk.GetImageFromArray(voxels.transpose(2, 1, 0))  # nibabel's (i, j, k) as ITK's (z, y, x)
        written.SetSpacing((0.8, 0.7, 2.5))
        sitk.WriteImage(written, str(folder / name))
    return sorted(folder.iterdir())


def _nrrds(folder: Path, image: Any, mask: Any) -> list[Path]:
    """The image and its mask as 3D Slicer saves them (`.nrrd`, the mask gzip-encoded), and the image as a detached
    `.nhdr` + `.raw` in a folder of its own: each header, data file and `.nrrd` a file to mutate."""
    import SimpleITK as sitk

    for path, voxels, compress in ((folder / "Doe_John.nrrd", image, False), (folder / "Doe_John_seg.nrrd", mask, True),
                                   (folder / "other" / "Smith_Jane.nhdr", image, False)):
        path.parent.mkdir(parents=True, exist_ok=True)
        written = sitk.GetImageFromArray(voxels.transpose(2, 1, 0))  # nibabel's (i, j, k) as ITK's (z, y, x)
        written.SetSpacing((0.8, 0.7, 2.5))
        sitk.WriteImage(written, str(path), useCompression=compress)
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _pairs_and_mghs(folder: Path, image: Any, mask: Any) -> list[Path]:
    """The image as a NIfTI pair (`.hdr` + `.img`) with its mask as FreeSurfer's `.mgz` beside it, the image as an
    Analyze 7.5 pair and as a gzip-compressed NIfTI pair, each in a folder of its own: each header, data file and
    `.mgz` a file to mutate."""
    import nibabel as nib
    import numpy as np

    affine = np.diag([0.8, 0.7, 2.5, 1.0])
    (folder / "other").mkdir(parents=True, exist_ok=True)
    nib.save(nib.Nifti1Pair(image, affine), str(folder / "Doe_Jane.hdr"))
    nib.save(nib.MGHImage(mask.astype(np.int32), affine), str(folder / "Doe_Jane_seg.mgz"))
    nib.save(nib.AnalyzeImage(image, affine), str(folder / "other" / "Smith_Ann.hdr"))
    (folder / "packed").mkdir(exist_ok=True)
    nib.save(nib.Nifti1Pair(image, affine), str(folder / "packed" / "Doe_Ann.hdr.gz"))  # + Doe_Ann.img.gz
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _petct(folder: Path, image: Any, mask: Any) -> list[Path]:
    """A case folder of a CT, and a PET with its mask on a coarser grid of their own, reversed in x: with
    --resample-channels (which the nifti target draws) the PET and the mask are sampled onto the CT's grid. And the
    same CT and PET named as HECKTOR 2022 names them, their mask on the CT's grid; and two such cases in one folder
    as HECKTOR 2021's files lie when taken out of their folders (CASE_ct, CASE_pt, CASE_ct_seg)."""
    import numpy as np
    from conftest_nifti import save

    pet = np.array([[1.6, 0.0, 0.0, 84.4], [0.0, -1.4, 0.0, 120.35], [0.0, 0.0, 2.5, -292.5], [0.0, 0.0, 0.0, 1.0]])
    case = folder / "Doe_Jane"
    hecktor = folder.parent / "hecktor"  # HECKTOR 2022's names: imagesTr/CASE__CT, CASE__PT, labelsTr/CASE
    return [save(case / "Doe_Jane_ct.nii.gz", image), save(case / "Doe_Jane_pt.nii.gz", image[::2, ::2], pet),
            save(case / "Doe_Jane_seg.nii.gz", mask[::2, ::2], pet),
            save(hecktor / "imagesTr" / "Doe_Jane__CT.nii.gz", image),
            save(hecktor / "imagesTr" / "Doe_Jane__PT.nii.gz", image[::2, ::2], pet),
            save(hecktor / "labelsTr" / "Doe_Jane.nii.gz", mask),
            *[save(folder.parent / "flat" / "hecktor_nii" / f"{name}_{what}.nii.gz", *data)
              for name in ("Doe_Jane", "Smith_Ann")
              for what, data in (("ct", (image,)), ("pt", (image[::2, ::2], pet)), ("ct_seg", (mask,)))]]


def _mincs(folder: Path, image: Any, mask: Any) -> list[Path]:
    """The image as MINC-1 with its mask as MINC-2 beside it, and the image as a MINC-1 `.mnc.gz` with a time axis
    in a folder of its own (scripts/minc_files.py writes them): each file to mutate."""
    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from minc_files import Axis, Minc, write_minc1, write_minc2

    axes = [Axis("zspace", 2.5), Axis("yspace", 0.7), Axis("xspace", 0.8)]
    zyx = image.transpose(2, 1, 0)
    write_minc1(folder / "Doe_Jane.mnc", Minc(zyx, axes, valid_range=(-1000.0, 1000.0)))
    write_minc2(folder / "Doe_Jane_seg.mnc", Minc(mask.transpose(2, 1, 0).copy(), axes))
    frames = np.stack([zyx, zyx[:, ::-1]])
    packed = write_minc1(folder / "other" / "Smith_Ann.mnc", Minc(frames, [Axis("time", 1.0), *axes],
                                                                  valid_range=(-1000.0, 1000.0)))
    packed.with_name(packed.name + ".gz").write_bytes(gzip.compress(packed.read_bytes(), mtime=0))
    packed.unlink()
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _segmented(folder: Path) -> list[Path]:
    """A phantom series with its segmentation (SEG) beside it, of two segments (tests/conftest_seg.py writes it with
    highdicom): each slice and the SEG a file to mutate."""
    import numpy as np
    from conftest_dicom import Phantom, write_phantom
    from conftest_seg import prepared_sources, write_seg

    phantom = Phantom(slices=4, rows=12, cols=10, series_uid=Phantom.series_uid + ".7")
    sources = prepared_sources(write_phantom(folder, phantom, seed=1))
    sphere = phantom.hu() > 0
    corner = np.zeros_like(sphere)
    corner[:2, :3, :3] = True
    write_seg(folder / "seg.dcm", sources, [("tumor", sphere), ("liver", corner)])
    return sorted(folder.iterdir())


def _outlined(folder: Path) -> list[Path]:
    """A phantom series with a structure set (RTSTRUCT) beside it (tests/conftest_rtstruct.py): a tumour of two
    contours, a ring with a hole (CLOSEDPLANAR_XOR), and a marker of one point; each slice and the structure set a
    file to mutate."""
    from conftest_dicom import Phantom, write_phantom
    from conftest_rtstruct import on_slice, write_rtstruct

    phantom = Phantom(slices=4, rows=12, cols=10, series_uid=Phantom.series_uid + ".8")
    write_phantom(folder, phantom, seed=2)
    box = [(1.5, 1.5), (1.5, 4.5), (4.5, 4.5), (4.5, 1.5)]
    ring = [on_slice(phantom, 2, [(5.2, 2.3), (5.2, 8.6), (10.7, 8.6), (10.7, 2.3)]),
            on_slice(phantom, 2, [(6.4, 4.1), (9.3, 5.2), (7.1, 7.4)])]
    write_rtstruct(folder / "rs.dcm", phantom.series_uid, [
        ("GTV-1", [on_slice(phantom, k, box) for k in (0, 1)]), ("Ring", ring),
        ("Marker", [on_slice(phantom, 3, [(8.0, 8.0)])])], kinds={"Marker": "POINT", "Ring": "CLOSEDPLANAR_XOR"})
    return sorted(folder.iterdir())


def _stacked(folder: Path) -> list[Path]:
    """A PET/CT study (tests/conftest_stacks.py: a CT and a PET of one frame of reference, in folders ct and pet)
    with a structure set on the PET, which --channel CT,PT stacks: each slice and the structure set a file to
    mutate."""
    from conftest_rtstruct import write_rtstruct
    from conftest_stacks import pet_ct

    pet_ct(folder)
    boxes = [[(5.0, 2.0, z), (14.0, 2.0, z), (14.0, 11.0, z), (5.0, 11.0, z)] for z in (8.0, 12.0)]
    write_rtstruct(folder / "pet" / "rs.dcm", "1.2.9.1.200", [("Lesion", boxes)])
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _afnis(folder: Path, image: Any, mask: Any) -> list[Path]:
    """The image as an AFNI dataset (`.HEAD` + `.BRIK`) with its mask beside it (`.BRIK.gz`), and the image as a
    scaled dataset of two sub-bricks (`.BRIK.bz2`) in a folder of its own (scripts/afni_files.py writes them): each
    header and data file a file to mutate."""
    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from afni_files import Afni, write_afni

    matrix = np.array([[-0.8, 0.0, 0.0, 10.0], [0.0, -0.7, 0.0, 5.0], [0.0, 0.0, 2.5, -20.0]])
    write_afni(folder / "Doe_Jane+orig.HEAD", Afni(image.astype(np.int16), matrix, history="3dcopy Doe_Jane.nii"))
    write_afni(folder / "Doe_Jane_seg+orig.HEAD", Afni(mask.astype(np.uint8), matrix), compress=".gz")
    bricks = np.stack([image, image[::-1]], axis=-1).astype(np.int16)
    write_afni(folder / "other" / "Smith_Ann+tlrc.HEAD", Afni(bricks, matrix, facs=[0.5, 0.0]), compress=".bz2")
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _parrecs(folder: Path) -> list[Path]:
    """Two real Philips PAR headers (nibabel's) with REC files of random pixels (scripts/parrec_files.py): a
    one-volume scan, and a 4D one of three dynamics in a folder of its own in Kirby21's lowercase names; each header
    and REC a file to mutate."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from parrec_files import copy_par

    copy_par("T1.PAR", folder / "Doe_Jane.PAR")
    copy_par("phantom_EPI_asc_CLEAR_2_1.PAR", folder / "other" / "Smith_Ann.par")
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _nifti_file(ctx: Context, rng: random.Random, label: str, path: Path) -> str:
    """A NIfTI image or mask of a Decathlon task, mutated (a gzipped one inside its gzip): every case converts or
    is rejected with a reason that no catch-all made, and no file name reaches what the conversion writes."""
    import gzip

    from converters.nifti import NiftiOptions

    src = ctx.case_dir  # kept by the runner when the case is a finding
    shutil.rmtree(src, ignore_errors=True)
    shutil.copytree(path.parents[1], src)
    target = src / path.relative_to(path.parents[1])
    zipped = path.name.endswith((".gz", ".mgz"))
    raw = gzip.decompress(path.read_bytes()) if zipped else path.read_bytes()
    fields = {".mhd": metaimage_field, ".mha": metaimage_field, ".nrrd": nrrd_field, ".nhdr": nrrd_field}
    data, what = mutate_bytes(rng, raw, (fields.get(path.suffix, nifti_field),))
    target.write_bytes(gzip.compress(data, mtime=0) if zipped and rng.random() < 0.8 else data)
    orientation, channel, overlap = rng.choice(ORIENTATIONS), rng.choice((None, "all")), rng.choice(OVERLAPS)
    written = _converted("nifti", NiftiOptions(salt="fuzz", orientation=orientation, channel=channel,
                                               overlap=overlap, resample_channels=rng.random() < 0.5),
                         src, "nifti case")
    for text in written:
        if any(name in text for name in ("Smith", "John", "Doe", "Jane")):
            raise Finding(f"a source file name written: {text[:200]!r}")
    _no_unexpected(written)
    return f"{label}: {what}, --orientation {orientation}, --channel {channel}, --overlap {overlap}"


def _dicom_file(ctx: Context, rng: random.Random, label: str, path: Path) -> str:
    from converters.dicom import DicomOptions

    series = ctx.work / "case-dicom"
    shutil.rmtree(series, ignore_errors=True)
    stack = path.parent.parent.name == "s"  # a study of series in folders of their own (_stacked)
    root = path.parent.parent if stack else path.parent
    shutil.copytree(root, series)
    data, what = mutate_bytes(rng, path.read_bytes(), (dicom_length,))
    (series / path.relative_to(root)).write_bytes(data)
    orientation, overlap, suv = rng.choice(ORIENTATIONS), rng.choice(OVERLAPS), rng.choice((False, "bw", "lbm", "bsa"))
    channels = ("CT", "PT") if stack and rng.random() < 0.8 else ()
    logged = _Logged()
    logging.getLogger().addHandler(logged)  # what the conversion logs (pydicom's own logger included)
    try:
        written = _converted("dicom", DicomOptions(salt="fuzz", orientation=orientation, overlap=overlap, suv=suv,
                                                   channels=channels), series, "dicom series")
    finally:
        logging.getLogger().removeHandler(logged)
    _no_phi(written + logged.messages)
    _no_unexpected(written)
    return (f"{path.relative_to(root)}: {what}, --orientation {orientation}, --overlap {overlap}, --suv {suv}, "
            f"--channel {','.join(channels) or None}")


class _Logged(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _no_unexpected(reasons: list[str]) -> None:
    """A rejection the catch-all made ('unexpected error: ...') is an exception nobody expected: a finding, though
    the conversion went on."""
    for reason in reasons:
        if reason.startswith("unexpected error"):
            raise Finding(f"rejected by the catch-all: {reason[:200]}")


def _no_phi(written: list[str]) -> None:
    """The privacy oracle: no identifier of the phantom in anything a default conversion writes into DST or logs."""
    from conftest_dicom import PHI_STRINGS, Phantom

    for text in written:
        for secret in (*PHI_STRINGS, Phantom.series_uid):
            if secret in text:
                raise Finding(f"{secret!r} written or logged: {text[:200]!r}")


def _text_file(ctx: Context, rng: random.Random, name: str, data: bytes) -> str:
    from converters.text.options import TextOptions
    from converters.text.records import read_documents

    data, what = mutate_bytes(rng, data)
    opts = TextOptions(tokenizer=str(ctx.tokenizer), separator="%" if name.endswith(".txt") else None,
                       max_document_bytes=4096, ids_field="input_ids" if name.startswith("ids/") else None)
    if name.startswith("labeled/"):  # a labelled table: its rows' labels, through the discovery that reads them
        from converters.text.discover import discover_text

        src = ctx.work / "labeled-text"
        shutil.rmtree(src, ignore_errors=True)
        src.mkdir()
        (src / Path(name).name).write_bytes(data)
        _expect(lambda: discover_text(src, options=opts), step=f"{name} discover")
        return f"{name}: {what}"
    path = ctx.work / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    documents = list(read_documents(path, opts))  # every problem is a Reject, never an exception
    if not all(isinstance(where, str) for where, _ in documents):
        raise Finding("a document without a location")
    from converters.text.token_files import TokenSpan

    if any(isinstance(d, TokenSpan) and len(d.ids()) != d.count for _, d in documents):  # read as the worker reads
        raise Finding("a token shard's document reads back another number of tokens")
    if opts.ids_field is not None:  # token ids as the worker reads them: whole int64 values, none negative
        from converters.text.ids import spilled_ids

        if any(isinstance(d, bytes) and (len(d) % 8 or spilled_ids(d).min() < 0) for _, d in documents):
            raise Finding("token ids spilled that are not whole non-negative int64 values")
    _discovered_alike(ctx, rng, name, data, opts)
    return f"{name}: {what}"


def _discovered_alike(ctx: Context, rng: random.Random, name: str, data: bytes, opts: Any) -> None:
    """A part of a conversion in parts discovers its source twice, the second time spilling only some documents
    (converters/part_reads.py): both discoveries of the mutated file must find the same documents, and the ones
    spilled must read back as the first discovery read them."""
    from converters.spill import spilled, spilling_only
    from converters.text.discover import discover_text

    src = ctx.work / "parts-text"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir()
    (src / Path(name).name).write_bytes(data)
    try:
        whole = discover_text(src, options=opts)
    except Exception as exc:  # noqa: BLE001 - the oracle sorts every exception
        if not _allowed(exc):
            raise Finding(f"{type(exc).__name__}: {exc}") from exc
        return
    items = [it for its in whole.splits.values() for it in its]
    wanted = {n for n in range(len(items)) if rng.random() < 0.5}
    with spilling_only(ref.ordinal for n in wanted for ref in spilled(items[n].payload)):
        again = discover_text(src, options=opts)
    second = [it for its in again.splits.values() for it in its]
    if [(it.split, it.rel, it.label) for it in second] != [(it.split, it.rel, it.label) for it in items] \
            or again.identity != whole.identity or again.rejected != whole.rejected:
        raise Finding("a second discovery of the same file found other documents")
    for n in wanted:
        a, b = second[n].payload, items[n].payload
        if (a != b) if not hasattr(a, "read_bytes") else a.read_bytes() != b.read_bytes():  # a token span: in place
            raise Finding(f"document {n} spilled by a part reads back other bytes")


def _hf_table(ctx: Context, rng: random.Random, name: str, data: bytes) -> str:
    """A Hugging Face table of images or of captioned images, mutated: its rows become work items or recorded
    rejections (a ConvertError for the source as a whole), and each item converts to a sample or a rejection, never
    an exception."""
    from converters.image_text.process import ImageTextOptions, PairProcessor
    from converters.image_text.tables import discover_caption_tables
    from converters.images.discover import discover_images
    from converters.images.encode import ImageOptions, process_image
    from converters.sample import Rejection, Sample

    tfrecord = name not in ARRAY_FILES and ("." not in name or ".tfrecord" in name)
    packed = name.endswith(".gz")
    xz = name.endswith(".xz") and rng.random() < 0.8  # mostly the values inside, else the compressed stream
    bz = name.endswith(".bz2") and rng.random() < 0.8
    data = gzip.decompress(data) if packed else lzma.decompress(data) if xz else bz2.decompress(data) if bz else data
    data, what = mutate_bytes(rng, data, (tfrecord_payload,) if tfrecord else ())
    data = _gzip(data) if packed else lzma.compress(data) if xz else bz2.compress(data) if bz else data
    src = ctx.work / "hf-table"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir()
    where = src / (name if name == LSUN_DATA else Path(name).name)
    where.parent.mkdir(exist_ok=True)
    where.write_bytes(data)
    if name in ARRAY_FILES:
        _array_partners(src, name, len(ctx.jpegs) + len(ctx.pngs))
    pairs = name.startswith("captions/")
    found: list[Any] = []
    discover = (functools.partial(discover_caption_tables, image_field=None, caption_field=None, split="train",
                                  max_bytes=1 << 20) if pairs else functools.partial(
        discover_images, max_pixels=1 << 16, multi_label=name == VOC_RECORDS))
    _expect(lambda: found.append(discover(src)), step=f"{name} discover")
    if found and name == VOC_RECORDS:
        _check_class_lists(found[0], name)
    convert = PairProcessor(ImageTextOptions(max_pixels=1 << 16), sha256=None) if pairs else functools.partial(
        process_image, opts=ImageOptions(max_pixels=1 << 16))
    for items in (found[0].splits.values() if found else ()):
        for i, item in enumerate(items):
            out = convert(dataclasses.replace(item, position=i))
            if not isinstance(out, Sample | Rejection) or (isinstance(out, Rejection) and
                                                           out.reason.startswith("unexpected")):
                raise Finding(f"{item.rel}: {out!r}")
    return f"{name}: {what}"


def _check_class_lists(found: Any, name: str) -> None:
    """A --multi-label discovery: a Finding unless every item's label is a sorted tuple of distinct classes."""
    for items in found.splits.values():
        for item in items:
            label = item.label
            if (not isinstance(label, tuple) or list(label) != sorted(set(label))
                    or not all(isinstance(c, int) and 0 <= c < len(found.classes) for c in label)):
                raise Finding(f"{name}: {item.rel} has the label {label!r} of {len(found.classes)} classes")


def _check_labels(found: Any, name: str) -> None:
    """A discovery of one class an image: a Finding unless every item's label is one of its classes."""
    for items in found.splits.values():
        for item in items:
            if not isinstance(item.label, int) or not 0 <= item.label < len(found.classes):
                raise Finding(f"{name}: {item.rel} has the label {item.label!r} of {len(found.classes)} classes")


# datasets that convert as they lie from their own lists (--multi-label): the list each case mutates
LIST_DATASETS = ("voc:ImageSets/Main/train.txt", "voc:ImageSets/Main/cat_train.txt",
                 "voc:ImageSets/Main/dog_val.txt", "celeba:list_attr_celeba.txt", "celeba:list_eval_partition.txt",
                 "celeba:list_attr_celeba.csv", "coco:annotations/instances_train2017.json", "chexpert:train.csv",
                 "mimic:mimic-cxr-2.0.0-chexpert.csv", "mimic:mimic-cxr-2.0.0-split.csv", "hf:train/metadata.jsonl",
                 "hf:val/metadata.csv", "cub:images.txt", "cub:image_class_labels.txt", "cub:train_test_split.txt",
                 "cub:classes.txt", "pets:annotations/trainval.txt", "pets:annotations/test.txt",
                 "food:meta/train.txt", "food:meta/test.txt", "dogs:train_list.mat", "gtsrb:GT-final_test.csv",
                 "gtsrbk:Train.csv", "gtsrbk:Test.csv", "cars:devkit/cars_train_annos.mat", "cars:devkit/cars_meta.mat",
                 "sun:ClassName.txt", "places:categories_places365.txt", "places:places365_train_standard.txt",
                 "places:places365_val.txt", "inat:train2018.json", "inat:categories.json",
                 "carsr:cars_annos.mat", "ilsvrc:ILSVRC2012_img_train.tar", "ilsvrc:ILSVRC2012_img_val.tar",
                 "ilsvrc:ILSVRC2012_devkit_t12.tar.gz")
# datasets of one class an image, discovered without --multi-label
SINGLE_LABEL_LISTS = ("cub", "pets", "food", "dogs", "gtsrb", "gtsrbk", "cars", "sun", "places", "inat", "carsr",
                      "ilsvrc")


def _list_folder(src: Path, kind: str, jpg: bytes, csv: bool) -> None:
    """A small Pascal VOC year folder, CelebA folder or COCO folder (converters/images/voc.py, celeba.py, coco.py)
    of one photo copied."""
    ids = ["000005", "000007", "000009", "000012"]
    if kind == "gtsrb":  # GTSRB's test ground truth beside its training folders (gtsrb.py)
        for k, i in enumerate(ids[:2]):
            (src / "GTSRB" / "Training" / f"0000{k}").mkdir(parents=True)
            (src / "GTSRB" / "Training" / f"0000{k}" / f"{i}.ppm").write_bytes(jpg)  # a JPEG named .ppm: decoded
        (src / "GTSRB" / "Final_Test" / "Images").mkdir(parents=True)
        for i in ids[2:]:
            (src / "GTSRB" / "Final_Test" / "Images" / f"{i}.ppm").write_bytes(jpg)
        (src / "GT-final_test.csv").write_text("Filename;Width;Height;Roi.X1;Roi.Y1;Roi.X2;Roi.Y2;ClassId\n" + "".join(
            f"{i}.ppm;9;9;1;1;8;8;{k}\n" for k, i in enumerate(ids[2:])))
        return
    if kind == "sun":  # SUN397's classes below a letter (sun397.py)
        for k, i in enumerate(ids):
            folder = src / ("a/abbey", "b/bakery/shop")[k % 2]
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"sun_{i}.jpg").write_bytes(jpg)
        (src / "ClassName.txt").write_text("/a/abbey\n/b/bakery/shop\n")
        return
    if kind == "inat":  # iNaturalist 2018's files in COCO's shape (inaturalist.py)
        for k, i in enumerate(ids):
            (src / "train_val2018" / "Plantae" / str(k % 2)).mkdir(parents=True, exist_ok=True)
            (src / "train_val2018" / "Plantae" / str(k % 2) / f"{i}.jpg").write_bytes(jpg)
        categories = [{"id": c, "name": f"obf{c}", "supercategory": "Plantae"} for c in (0, 1)]
        for split, part in (("train", ids[:3]), ("val", ids[3:])):
            images = [{"id": n, "file_name": f"train_val2018/Plantae/{ids.index(i) % 2}/{i}.jpg"}
                      for n, i in enumerate(part)]
            annotations = [{"id": n, "image_id": n, "category_id": ids.index(i) % 2} for n, i in enumerate(part)]
            (src / f"{split}2018.json").write_text(json.dumps({"images": images, "annotations": annotations,
                                                               "categories": categories}))
        (src / "categories.json").write_text(json.dumps([{"id": 0, "name": "Abies"}, {"id": 1, "name": "Anas"}]))
        return
    if kind == "places":  # Places365's categories and lists (places365.py)
        (src / "val_256").mkdir(parents=True)
        (src / "categories_places365.txt").write_text("/a/airfield 0\n/b/bakery/shop 1\n")
        for k, i in enumerate(ids):
            folder = src / "data_256" / ("a/airfield", "b/bakery/shop")[k % 2]
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{i}.jpg").write_bytes(jpg)
            (src / "val_256" / f"Places365_val_{i}.jpg").write_bytes(jpg)
        (src / "places365_train_standard.txt").write_text("".join(
            f"/{('a/airfield', 'b/bakery/shop')[k % 2]}/{i}.jpg {k % 2}\n" for k, i in enumerate(ids)))
        (src / "places365_val.txt").write_text("".join(f"Places365_val_{i}.jpg {k % 2}\n" for k, i in enumerate(ids)))
        return
    if kind == "cars":  # Stanford Cars' devkit (stanford_cars.py): MATLAB struct and cell arrays
        import numpy as np
        from scipy.io import savemat

        (src / "cars_train").mkdir(parents=True)
        (src / "devkit").mkdir()
        names = np.empty((1, 2), dtype=object)
        names[0, 0], names[0, 1] = np.array(["Audi A4 2010"]), np.array(["smart fortwo 2012"])
        savemat(src / "devkit" / "cars_meta.mat", {"class_names": names})
        annotations = np.empty((1, len(ids)), dtype=[("class", object), ("fname", object)])
        for k, i in enumerate(ids):
            (src / "cars_train" / f"{i}.jpg").write_bytes(jpg)
            annotations[0, k] = (np.array([[k % 2 + 1]], dtype=np.uint8), np.array([f"{i}.jpg"]))
        savemat(src / "devkit" / "cars_train_annos.mat", {"annotations": annotations})
        return
    if kind == "ilsvrc":  # image-net.org's archives, read without unpacking (imagenet_archives.py)
        import tarfile

        import numpy as np
        from scipy.io import savemat

        def tar_of(members: dict[str, bytes], mode: str = "w") -> bytes:
            out = io.BytesIO()
            with tarfile.open(fileobj=out, mode=mode, format=tarfile.USTAR_FORMAT) as tar:
                for member, data in members.items():
                    info = tarfile.TarInfo(member)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
            return out.getvalue()

        src.mkdir(parents=True)
        wnids = ["n01440764", "n01443537"]
        (src / "ILSVRC2012_img_train.tar").write_bytes(tar_of({f"{w}.tar": tar_of(
            {f"{w}_{i}.JPEG": jpg for i in ids[:2]}) for w in wnids}))
        (src / "ILSVRC2012_img_val.tar").write_bytes(tar_of({f"ILSVRC2012_val_{n:08d}.JPEG": jpg for n in (1, 2, 3)}))
        synsets = np.empty((2, 1), dtype=[("ILSVRC2012_ID", object), ("WNID", object)])
        for k, w in enumerate(wnids):
            synsets[k, 0] = (np.array([[k + 1]], dtype=np.uint16), np.array([w]))
        meta = io.BytesIO()
        savemat(meta, {"synsets": synsets})
        (src / "ILSVRC2012_devkit_t12.tar.gz").write_bytes(tar_of({
            "ILSVRC2012_devkit_t12/data/meta.mat": meta.getvalue(),
            "ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt": b"2\n1\n2\n"}, mode="w:gz"))
        return
    if kind == "carsr":  # Stanford Cars' first release: cars_annos.mat beside car_ims/ (stanford_cars.py)
        import numpy as np
        from scipy.io import savemat

        (src / "car_ims").mkdir(parents=True)
        names = np.empty((1, 2), dtype=object)
        names[0, 0], names[0, 1] = np.array(["Audi A4 2010"]), np.array(["smart fortwo 2012"])
        annotations = np.empty((1, len(ids)), dtype=[("relative_im_path", object), ("class", object), ("test", object)])
        for k, i in enumerate(ids):
            (src / "car_ims" / f"{i}.jpg").write_bytes(jpg)
            annotations[0, k] = (np.array([f"car_ims/{i}.jpg"]), np.array([[k % 2 + 1]], dtype=np.uint8),
                                 np.array([[k // 3]], dtype=np.uint8))
        savemat(src / "cars_annos.mat", {"annotations": annotations, "class_names": names})
        return
    if kind == "gtsrbk":  # Kaggle's copy of GTSRB (gtsrb.py)
        rows = {f"Train/{k}/{i}.png": k for k, i in enumerate(ids[:2])} | {f"Test/{i}.png": 1 for i in ids[2:]}
        for rel in rows:
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            (src / rel).write_bytes(jpg)  # a JPEG named .png: decoded by what it holds
        for name, split in (("Train.csv", "Train/"), ("Test.csv", "Test/")):
            (src / name).write_text("Width,Height,Roi.X1,Roi.Y1,Roi.X2,Roi.Y2,ClassId,Path\n" + "".join(
                f"9,9,1,1,8,8,{k},{rel}\n" for rel, k in rows.items() if rel.startswith(split)))
        return
    if kind == "dogs":  # Stanford Dogs' MATLAB lists (stanford_dogs.py)
        import numpy as np
        from scipy.io import savemat

        paths = [f"n0{k % 2}-{('pug', 'chow')[k % 2]}/{i}.jpg" for k, i in enumerate(ids)]
        for path in paths:
            (src / "Images" / path).parent.mkdir(parents=True, exist_ok=True)
            (src / "Images" / path).write_bytes(jpg)
        for split, part in (("train", paths[:3]), ("test", paths[3:])):
            cells = np.empty((len(part), 1), dtype=object)
            for n, path in enumerate(part):
                cells[n, 0] = np.array([path])
            savemat(src / f"{split}_list.mat", {"file_list": cells, "labels": np.ones((len(part), 1))})
        return
    if kind == "food":  # Food-101's lists (folder_lists.py)
        (src / "meta").mkdir(parents=True)
        for k, i in enumerate(ids):
            (src / "images" / ("pizza", "ramen")[k % 2]).mkdir(parents=True, exist_ok=True)
            (src / "images" / ("pizza", "ramen")[k % 2] / f"{i}.jpg").write_bytes(jpg)
        for split, part in (("train", ids[:3]), ("test", ids[3:])):
            (src / "meta" / f"{split}.txt").write_text("".join(f"{('pizza', 'ramen')[ids.index(i) % 2]}/{i}\n"
                                                             for i in part))
        return
    if kind == "pets":  # Oxford-IIIT Pet's lists (oxford_pet.py)
        (src / "images").mkdir(parents=True)
        (src / "annotations").mkdir()
        for k, i in enumerate(ids):
            (src / "images" / f"{('Bengal', 'pug')[k % 2]}_{i}.jpg").write_bytes(jpg)
        for split, part in (("trainval", ids[:3]), ("test", ids[3:])):
            (src / "annotations" / f"{split}.txt").write_text("".join(
                f"{('Bengal', 'pug')[ids.index(i) % 2]}_{i} {ids.index(i) % 2 + 1} 1 1\n" for i in part))
        return
    if kind == "cub":  # CUB-200-2011's lists (cub.py)
        for k, i in enumerate(ids):
            (src / "images" / f"00{k % 2 + 1}.bird").mkdir(parents=True, exist_ok=True)
            (src / "images" / f"00{k % 2 + 1}.bird" / f"{i}.jpg").write_bytes(jpg)
        (src / "images.txt").write_text("".join(f"{k + 1} 00{k % 2 + 1}.bird/{i}.jpg\n" for k, i in enumerate(ids)))
        (src / "image_class_labels.txt").write_text("".join(f"{k + 1} {k % 2 + 1}\n" for k in range(len(ids))))
        (src / "train_test_split.txt").write_text("".join(f"{k + 1} {k // 3}\n" for k in range(len(ids))))
        (src / "classes.txt").write_text("1 001.bird\n2 002.bird\n")
        return
    if kind == "hf":  # Hugging Face ImageFolder metadata in each split folder (folder_labels.py)
        for k, i in enumerate(ids):
            (src / ("train" if k < 2 else "val")).mkdir(parents=True, exist_ok=True)
            (src / ("train" if k < 2 else "val") / f"{i}.jpg").write_bytes(jpg)
        (src / "train" / "metadata.jsonl").write_text(f'{{"file_name": "{ids[0]}.jpg", "labels": ["cat", "dog"]}}\n'
                                                      f'{{"file_name": "{ids[1]}.jpg", "labels": []}}\n')
        (src / "val" / "metadata.csv").write_text(f"file_name,labels\n{ids[2]}.jpg,dog\n{ids[3]}.jpg,cat|bird\n")
        return
    if kind == "mimic":
        studies = ["50414267", "53189527", "57375967"]
        (src / "mimic-cxr-2.0.0-chexpert.csv").parent.mkdir(parents=True)
        (src / "mimic-cxr-2.0.0-chexpert.csv").write_text("subject_id,study_id,Cardiomegaly,Edema,No Finding\n"
                                                          f"10000032,{studies[0]},1.0,-1.0,\n"
                                                          f"10000032,{studies[1]},,,1.0\n")
        rows = ["dicom_id,study_id,subject_id,split"]
        for k, i in enumerate(ids):
            study = studies[k % 3]
            path = src / "files" / "p10" / "p10000032" / f"s{study}" / f"{i}.jpg"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(jpg)
            rows.append(f"{i},{study},10000032,{('train', 'validate', 'test')[k % 3]}")
        (src / "mimic-cxr-2.0.0-split.csv").write_text("\n".join(rows) + "\n")
        return
    if kind == "chexpert":
        (src / "train").mkdir(parents=True)
        lines = ["Path,Sex,Age,Frontal/Lateral,AP/PA,No Finding,Cardiomegaly,Edema"]
        for k, i in enumerate(ids):
            (src / "train" / f"{i}.jpg").write_bytes(jpg)
            lines.append(f"small/train/{i}.jpg,Female,{60 + k},Frontal,AP," + ("1.0,,", ",1.0,-1.0", ",0.0,",
                                                                                 ",,")[k])
        (src / "train.csv").write_text("\n".join(lines) + "\n")
        return
    if kind == "coco":
        (src / "annotations").mkdir(parents=True)
        (src / "train2017").mkdir()
        for i in ids:
            (src / "train2017" / f"{i}.jpg").write_bytes(jpg)
        (src / "annotations" / "instances_train2017.json").write_text(json.dumps({
            "images": [{"id": k + 1, "file_name": f"{i}.jpg", "height": 8, "width": 8} for k, i in enumerate(ids)],
            "annotations": [{"id": 10 + k, "image_id": k % 3 + 1, "category_id": (1, 18, 3)[k % 3], "iscrowd": 0,
                             "bbox": [0, 0, 1, 1]} for k in range(5)],
            "categories": [{"id": 1, "name": "person"}, {"id": 3, "name": "car"}, {"id": 18, "name": "dog"}]}))
        return
    if kind == "voc":
        main = src / "ImageSets" / "Main"
        main.mkdir(parents=True)
        (src / "JPEGImages").mkdir()
        marks = {"cat": [1, -1, 0, -1], "dog": [-1, 1, 1, -1]}
        for split, images in (("train", ids[:2]), ("val", ids[2:])):
            (main / f"{split}.txt").write_text("".join(f"{i}\n" for i in images))
            for cls, row in marks.items():
                (main / f"{cls}_{split}.txt").write_text("".join(f"{i} {row[ids.index(i)]:2d}\n" for i in images))
    else:
        (src / "img_align_celeba").mkdir(parents=True)
        rows = [f"{i}.jpg" + "".join(f" {m:2d}" for m in ((1, -1), (-1, -1), (1, 1), (-1, 1))[k]) for k, i in
                enumerate(ids)]
        if csv:
            (src / "list_attr_celeba.csv").write_text("image_id,Bald,Young\n" + "".join(
                ",".join(r.split()) + "\n" for r in rows))
        else:
            (src / "list_attr_celeba.txt").write_text(f"{len(ids)}\nBald Young \n" + "\n".join(rows) + "\n")
        (src / "list_eval_partition.txt").write_text("".join(f"{i}.jpg {k % 3}\n" for k, i in enumerate(ids)))
    for i in ids:
        (src / ("JPEGImages" if kind == "voc" else "img_align_celeba") / f"{i}.jpg").write_bytes(jpg)


def _list_dataset(ctx: Context, rng: random.Random, label: str, _: Any) -> str:
    """A VOC or CelebA folder whose one list is mutated (as bytes): its discovery with --multi-label, whose every
    label must be a sorted tuple of distinct classes, or a fastdata error."""
    from converters.images.discover import discover_images
    from fastdata.errors import ConvertError

    kind, name = label.split(":", 1)
    src = ctx.work / "case-lists"
    shutil.rmtree(src, ignore_errors=True)
    _list_folder(src, kind, ctx.jpegs[0][1], name.endswith(".csv"))
    path = src / name
    if name.endswith(".json") and rng.random() < 0.5:
        doc, what = mutate_json(rng, json.loads(path.read_bytes()))
        path.write_text(dumps(doc))
    else:
        data, what = mutate_bytes(rng, path.read_bytes(), (text_number,))
        path.write_bytes(data)
    found: list[Any] = []
    uncertain = rng.choice(("ones", "zeros")) if kind in ("chexpert", "mimic") else None
    def discover() -> None:
        try:
            found.append(discover_images(src, multi_label=kind not in SINGLE_LABEL_LISTS, uncertain=uncertain))
        except ValueError as exc:  # a header mutated past CheXpert's makes --uncertain a usage error, said so
            if not str(exc).startswith("--uncertain reads"):
                raise
            raise ConvertError(str(exc)) from exc

    _expect(discover, step=f"{kind} discover")
    for item in (it for d in found for items in d.splits.values() for it in items if it.payload is not None):
        try:  # an image inside an archive: its bytes, or an OSError that the conversion rejects it by
            data = item.payload.read_bytes()
        except OSError:
            continue
        if len(data) != item.payload.length:
            raise Finding(f"{label}: {item.rel} read {len(data)} bytes of {item.payload.length}")
    if found and kind in SINGLE_LABEL_LISTS:
        _check_labels(found[0], label)
    elif found:
        _check_class_lists(found[0], label)
    return f"{label}: {what}"


def _unreadable_sources(ctx: Context) -> list[tuple[str, Any]]:
    """(label, (maker of the source, convert options)) of sources of every kind, for the unreadable target."""
    from fuzz_unreadable import TREES, copier, tree_maker

    jpg = ctx.jpegs[0][1]
    tokenizer = ["--tokenizer", str(ctx.tokenizer)]
    out = [(f"images: {layout}", (tree_maker(layout, jpg), [], "images")) for layout in TREES]
    for kind in sorted({n.split(":")[0] for n in LIST_DATASETS}):
        options = ([] if kind in SINGLE_LABEL_LISTS else ["--multi-label"]) + \
            (["--uncertain", "ones"] if kind in ("chexpert", "mimic") else [])
        out.append((f"lists: {kind}", (functools.partial(_list_folder, kind=kind, jpg=jpg, csv=False), options,
                                       "images")))
    out.append(("text: text-src", (copier(ctx.work / "text-src"), tokenizer, "text")))
    out += [(f"volumes: {name}", (copier(ctx.work / name), [], "dicom")) for name in (
        "dcm-src", "dcm-seg", "dcm-rt", "dcm-pet", "dcm-stack")]
    out += [(f"volumes: {name}", (copier(ctx.work / name), [], "nifti")) for name in (
        "nii-src", "nii-ts", "mhd-src", "nrrd-src", "minc-src", "afni-src", "parrec-src", "petct-src")]
    out.append(("pairs: pair-src", (copier(ctx.work / "pair-src"), tokenizer, "image_text")))
    return out


def _unreadable(ctx: Context, rng: random.Random, label: str,
                setup: tuple[Callable[[Path], None], list[str], str]) -> str:
    """A valid source with folders that cannot be listed, surveyed (tests/fuzz_unreadable.py)."""
    from fuzz_unreadable import survey_unreadable

    make, options, kind = setup
    src = ctx.work / "case-unreadable" / "src"
    shutil.rmtree(src.parent, ignore_errors=True)
    src.parent.mkdir(parents=True)
    make(src)
    try:
        return f"{label}: {survey_unreadable(src, rng, options, kind)}"
    except AssertionError as exc:
        raise Finding(str(exc)) from exc


def _table_file(ctx: Context, rng: random.Random, name: str, data: bytes) -> str:
    """A captions file or a labels CSV, mutated (as bytes, or as JSON values): rows, or a ConvertError."""
    from converters.image_text.captions import read_captions
    from converters.images.labels_csv import read_labels

    if name.endswith(".json") and rng.random() < 0.5:
        doc, what = mutate_json(rng, json.loads(data))
        data = dumps(doc).encode()
    else:
        data, what = mutate_bytes(rng, data, (text_number,))
    path = ctx.work / name
    path.write_bytes(data)
    labels = name in ("labels.csv", "LOC_val_solution.csv", "train_list.txt")
    if name in MULTI_LABEL_TABLES:
        _expect(lambda: _multi_labels(path), step=f"{name} read")
    elif name in CLASS_FILES:
        _expect(lambda: _class_names(path), step=f"{name} read")
    elif name == "HAM10000_metadata.csv":
        _expect(lambda: read_labels(path, columns=("image_id", "dx")), step=f"{name} read")
    else:
        _expect(lambda: read_labels(path) if labels else read_captions(path), step=f"{name} read")
    return f"{name}: {what}"


CLASS_FILES = {  # each --classes file with the classes (codes) of the source it names
    "oidv7-class-descriptions.csv": ("/m/014sv8", "/m/01g317", "/m/05s2s"),
    "LOC_synset_mapping.txt": ("/m/05s2s", "n01440764", "n01443537"), "categories_places365.txt": ("/a/alley",)}


def _class_names(path: Path) -> None:
    """A --classes file read as names of ids and as names of codes: a Finding unless the names are as many as the
    codes, distinct and none blank (or none is named)."""
    from converters.images.id_names import name_codes, read_names

    codes = CLASS_FILES[path.name]
    for names, count in ((read_names(path), None), (name_codes(codes, path), len(codes))):
        if names is None:
            continue
        if count is not None and len(names) != count or len(set(names)) != len(names) or \
                not all(n.strip() for n in names):
            raise Finding(f"{path.name}: the names {names!r}")


MULTI_LABEL_TABLES = ("Data_Entry_2017.csv", "train_v2.csv", "multi_hot.csv", "list_attr_celeba.txt",
                      "long_labels.csv", "oidv6-train-annotations-human-imagelabels.csv")


def _multi_labels(path: Path) -> None:
    """A --multi-label table read: a Finding unless every row's classes are distinct classes of the table, none
    empty."""
    from converters.images.labels_csv import read_labels

    labels = read_labels(path, multi=True)
    for name, classes in labels.rows.items():
        if len(set(classes)) != len(classes) or not set(classes) <= set(labels.classes) or "" in classes:
            raise Finding(f"{path.name}: row {name!r} has the classes {classes!r} of {labels.classes!r}")
    if len(set(labels.classes)) != len(labels.classes):
        raise Finding(f"{path.name}: a class twice in {labels.classes!r}")


def _manifest(ctx: Context, rng: random.Random, label: str, _: Any) -> str:
    import fastdata
    from fastdata.dataset import open_dataset
    from fastdata.verify import verify_dataset

    ds = ctx.fresh(label)
    doc, what = mutate_json(rng, json.loads((ds / "manifest.json").read_text()))
    (ds / "manifest.json").write_text(dumps(doc))
    _expect(lambda: open_dataset(ds), step="manifest open")
    _expect(lambda: verify_dataset(ds), step="manifest verify")
    options = {"wds": dict(batch_size=2, image_size=32, backend="kornia", device="cpu", num_threads=1),
               "tokens": dict(max_tokens=64), "volumes": dict(batch_size=1, patch_size=(4, 8, 8), num_workers=1)}
    _expect(lambda: _epoch(fastdata.loader(ds, **options[label])), step="manifest epoch")
    return f"{label}/manifest.json: {what}"


def _flat(value: Any) -> Any:
    """A batch as plain values (tensors as lists), to compare two epochs exactly."""
    if hasattr(value, "tolist"):
        return (str(getattr(value, "dtype", "")), tuple(getattr(value, "shape", ())), value.tolist())
    if isinstance(value, dict):
        return {k: _flat(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_flat(v) for v in value]
    return value


_EVAL_IMAGES = dict(batch_size=2, image_size=32, backend="kornia", device="cpu", num_threads=1, train=False)
REMOTE_OPTIONS = {"wds": _EVAL_IMAGES, "pairs": _EVAL_IMAGES, "tokens": dict(max_tokens=64, shuffle=False),
                  "volumes": dict(batch_size=1, patch_size=(4, 8, 8), num_workers=1)}
REMOTE_TIMEOUTS = {"read_timeout": 0.3, "connect_timeout": 0.5, "attempts": 3, "deadline": 2.0}


def _remote_epoch(source: Any, label: str, cache: Path | None = None) -> list:
    import fastdata

    remote = {} if cache is None else {"cache_dir": cache, "storage_options": REMOTE_TIMEOUTS}
    return [_flat(batch) for batch in fastdata.loader(source, **REMOTE_OPTIONS[label], **remote)]


def _remote(ctx: Context, rng: random.Random, label: str, _: Any) -> str:
    """A dataset served over HTTP by a hostile server (tests/fuzz_answers.py) for one of its files. The oracle:
    the epoch equals the local one or ends in a fastdata error, and the cache is not poisoned: afterwards an
    honest server gives the local epoch from the same cache."""
    from fuzz_answers import hostile

    server = ctx.server()
    names = ["manifest.json"] + sorted(p.name for p in (ctx.work / label).iterdir() if p.name != "manifest.json")
    victim = rng.choice(names)
    rewrite, what, changes_bytes, lawful = hostile(rng, server.url,
                                                   lambda path: (ctx.work / path.lstrip("/")).read_bytes())
    want = ctx.local_epoch(label)
    cache = ctx.work / "case-cache"
    shutil.rmtree(cache, ignore_errors=True)
    server.rewrite = lambda m, path, r, a: rewrite(m, path, r, a) if path.split("?")[0].endswith("/" + victim) else a
    try:
        try:
            got = _remote_epoch(server.url + label + "/", label, cache)
            OUTCOMES[("remote epoch", "ran")] += 1
        except Exception as exc:  # noqa: BLE001 - the oracle sorts every exception
            if not _allowed(exc) or lawful:
                raise Finding(f"{victim}, {what}: {type(exc).__name__}: {exc}") from exc
            OUTCOMES[("remote epoch", f"refused: {type(exc).__name__}")] += 1
        else:
            if got != want and not (victim == "manifest.json" and changes_bytes):
                raise Finding(f"{victim}, {what}: the epoch differs from the local one ({len(got)} batches, "
                              f"{len(want)} local)")
    finally:
        server.rewrite = None
    if _remote_epoch(server.url + label + "/", label, cache) != want:
        raise Finding(f"{victim}, {what}: the cache was poisoned: an honest server's epoch from the same cache "
                      "differs")
    return f"{label}/{victim}: {what}"


def _state(ctx: Context, rng: random.Random, label: str, make: Callable[[], Any]) -> str:
    loader = make()
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    if hasattr(it, "close"):
        it.close()
    doc, what = mutate_json(rng, state)
    fresh = make()
    try:
        fresh.load_state_dict(doc)
    except Exception as exc:  # noqa: BLE001
        if not _allowed(exc, ValueError):
            raise Finding(f"load_state_dict: {type(exc).__name__}: {exc}") from exc
        OUTCOMES[("state load", "refused")] += 1
        return f"{label} state refused: {what}"
    _expect(lambda: _epoch(fresh), step="state accepted, epoch")  # an accepted state must load and run
    return f"{label} state accepted: {what}"


def _hostile_values() -> list[Any]:
    """Values a slip, a config file or a YAML parser may hand an option: out of range, of another type, numpy's and
    torch's numbers, containers, bytes."""
    import numpy as np
    import torch

    nan, inf = float("nan"), float("inf")
    return [0, -1, 1, 2, 7, 2**31, 2**63, 10**30, True, False, 1.5, nan, inf, -inf, -0.0, 1e-300, 1e308, "3", "",
            "x" * 300, None, [], (), {}, [1], [1, 2, 3], [nan, 1], (0.5, 0.5, 0.5), {"a": 1}, np.int64(3),
            np.float32(0.5), np.array([1, 2]), torch.tensor(3), b"x", object()]


def _names(exc: BaseException, option: str) -> bool:
    """Whether a refusal says which option it refuses: its name, spaced or dashed, or its first word."""
    text = str(exc)
    first = option.split("_")[0].removesuffix("s")  # `weights`: "every weight must be ..."
    return any(n in text for n in (option, option.replace("_", " "), option.replace("_", "-"))) or \
        (len(first) > 3 and first in text)


def _options(ctx: Context, rng: random.Random, label: str, setup: tuple[Callable[..., Any], list[str]]) -> str:
    """One option of a loader given a hostile value. The oracle: the loader yields a batch (finite images), or it is
    refused with a fastdata error, or with a ValueError/TypeError that names the option; anything else (another
    exception, a refusal that does not say what it refuses, a hang) is a finding."""
    import torch

    make, names = setup
    option, value = rng.choice(names), rng.choice(_hostile_values())
    what = f"{label}: {option}={value!r}"[:160]
    try:
        with make(**{option: value}) as loader:
            for batch in loader:
                images = batch[0] if isinstance(batch, tuple) else None
                if isinstance(images, torch.Tensor) and images.is_floating_point() and \
                        not bool(torch.isfinite(images).all()):
                    raise Finding(f"{what}: a batch holds infinities or NaN")
                break
        OUTCOMES[("options", "ran")] += 1
    except Finding:
        raise
    except Exception as exc:  # noqa: BLE001 - the oracle sorts every exception
        if _allowed(exc):
            OUTCOMES[("options", f"refused: {type(exc).__name__}")] += 1
        elif isinstance(exc, ValueError | TypeError) and _names(exc, option):
            OUTCOMES[("options", "refused by name")] += 1
        else:
            raise Finding(f"{what}: {type(exc).__name__}: {exc}") from exc
    return what


def _option_loaders(ctx: Context) -> list[tuple[str, Any]]:
    """(label, (a loader factory taking one option, the options to try)) for each loader."""
    import dataclasses as dc

    import fastdata
    from fastdata.images.options import ImageLoaderOptions
    from fastdata.text.options import SequenceLoaderOptions
    from fastdata.volumes.options import VolumeLoaderOptions

    def fields(cls: type, *extra: str) -> list[str]:
        return [f.name for f in dc.fields(cls) if f.name not in ("image_sizes", "backend")] + list(extra)

    remote = ("split", "cache_dir", "cache_limit", "storage_options")
    images = dict(batch_size=2, image_size=32, backend="kornia", device="cpu", num_threads=1)

    def loader(source: Any, base: dict[str, Any]) -> Callable[..., Any]:
        return lambda **one: fastdata.loader(source, **{**base, **one})

    mixture = [str(ctx.work / "wds"), str(ctx.work / "arrow")]
    return [
        ("images", (loader(ctx.work / "wds", images), fields(ImageLoaderOptions, *remote))),
        ("tokens", (loader(ctx.work / "tokens", dict(max_tokens=64)), fields(SequenceLoaderOptions, *remote))),
        ("volumes", (loader(ctx.work / "volumes", dict(batch_size=1, patch_size=(4, 8, 8), num_workers=1)),
                     fields(VolumeLoaderOptions, *remote))),
        ("mixture", (loader(mixture, {**images, "weights": [1, 2]}),
                     ["weights", "weight_by", "samples_per_epoch", "tokens_per_epoch", "return_dataset"])),
        ("pairs", (loader(ctx.work / "pairs", images), ["tokenizer", "max_length", "return_captions"])),
    ]


def targets(ctx: Context) -> list[Target]:
    import fastdata

    def image_loader() -> Any:
        return fastdata.loader(ctx.work / "wds", batch_size=2, image_size=32, backend="kornia", device="cpu",
                               num_threads=1)

    def every_other(dataset: str) -> range:
        """Every other sample of the dataset's train split: a subset (`indices=`)."""
        from fastdata.manifest import read_manifest

        return range(0, read_manifest(ctx.work / dataset).split("train").samples, 2)

    def ramp(dataset: str) -> list[float]:
        """Weights 1, 2, 3, ... over the dataset's train split: weighted sampling (`sample_weights=`)."""
        from fastdata.manifest import read_manifest

        return [float(i) for i in range(1, read_manifest(ctx.work / dataset).split("train").samples + 1)]

    return [
        Target("jpeg", lambda: ctx.jpegs, lambda r, label, d: _image_bytes(ctx, r, label, d, (jpeg_frame_size,))),
        Target("png", lambda: ctx.pngs, lambda r, label, d: _image_bytes(ctx, r, label, d, (png_header_size,))),
        Target("tar", lambda: [("tar", None), ("idx", None)], lambda r, label, d: _tar_shard(ctx, r, label, d)),
        Target("arrow", lambda: [("arrow", None), ("tokens", None)],
               lambda r, label, d: _arrow_shard(ctx, r, label, d)),
        Target("volume", lambda: [("volume", None), ("masked volume", None)],
               lambda r, label, d: _volume_shard(ctx, r, label, d)),
        Target("nifti", lambda: [(p.name, p) for p in ctx.nifti_files],
               lambda r, label, p: _nifti_file(ctx, r, label, p)),
        Target("pairs", lambda: [("pairs", None)], lambda r, label, d: _pairs_shard(ctx, r, label, d)),
        Target("adopt", lambda: list(ctx.foreign.items()), lambda r, label, p: _foreign_tar(ctx, r, label, p)),
        Target("dicom", lambda: [(p.name, p) for p in ctx.dicom_files],
               lambda r, label, p: _dicom_file(ctx, r, label, p)),
        Target("text", lambda: ctx.texts, lambda r, label, d: _text_file(ctx, r, label, d)),
        Target("tables", lambda: ctx.tables, lambda r, label, d: _table_file(ctx, r, label, d)),
        Target("hf_tables", lambda: ctx.image_tables, lambda r, label, d: _hf_table(ctx, r, label, d)),
        Target("lists", lambda: [(n, None) for n in LIST_DATASETS],
               lambda r, label, d: _list_dataset(ctx, r, label, d)),
        Target("unreadable", lambda: _unreadable_sources(ctx), lambda r, label, d: _unreadable(ctx, r, label, d)),
        Target("manifest", lambda: [("wds", None), ("tokens", None), ("volumes", None)],
               lambda r, label, d: _manifest(ctx, r, label, d)),
        Target("tree", lambda: [("class", None), ("split/class", None), ("flat", None), ("split/loose", None),
                                     ("named", None), ("class/split", None)],
               lambda r, label, d: _tree(ctx, r, label, d)),
        Target("remote", lambda: [(k, None) for k in REMOTE_OPTIONS], lambda r, label, d: _remote(ctx, r, label, d)),
        Target("options", lambda: _option_loaders(ctx), lambda r, label, d: _options(ctx, r, label, d)),
        Target("state", lambda: [
            ("images", image_loader),
            ("tokens", lambda: fastdata.loader(ctx.work / "tokens", max_tokens=8)),
            ("token mixture", lambda: fastdata.loader({str(ctx.work / "tokens"): 1.0, str(ctx.work / "tokens2"): 3.0},
                                                      max_tokens=8)),
            ("mixture", lambda: fastdata.loader({str(ctx.work / "wds"): 1.0, str(ctx.work / "arrow"): 2.0},
                                                batch_size=2, image_size=32, backend="kornia", device="cpu",
                                                num_threads=1)),
            ("volumes", lambda: fastdata.loader(ctx.work / "volumes", batch_size=1, patch_size=(4, 8, 8),
                                                num_workers=1)),
            # a state's epoch picks the size of a progressive schedule: a hostile one builds a backend for it
            ("resizing images", lambda: fastdata.loader(ctx.work / "wds", batch_size=2, backend="kornia",
                                                        image_size={0: 16, 1: 24, 3: 32}, device="cpu",
                                                        num_threads=1)),
            ("image subset", lambda: fastdata.loader(ctx.work / "wds", batch_size=2, image_size=32, backend="kornia",
                                                     device="cpu", num_threads=1, indices=every_other("wds"))),
            ("token subset", lambda: fastdata.loader(ctx.work / "tokens", max_tokens=8, indices=every_other("tokens"))),
            ("volume subset", lambda: fastdata.loader(ctx.work / "volumes", batch_size=1, patch_size=(4, 8, 8),
                                                      num_workers=1, indices=every_other("volumes"))),
            ("weighted images", lambda: fastdata.loader(ctx.work / "wds", batch_size=2, image_size=32,
                                                        backend="kornia", device="cpu", num_threads=1,
                                                        sample_weights=ramp("wds"))),
            ("weighted tokens", lambda: fastdata.loader(ctx.work / "tokens", max_tokens=8,
                                                        sample_weights=ramp("tokens"))),
            ("weighted volumes", lambda: fastdata.loader(ctx.work / "volumes", batch_size=1, patch_size=(4, 8, 8),
                                                         num_workers=1, sample_weights=ramp("volumes"))),
        ], lambda r, label, make: _state(ctx, r, label, make)),
    ]


# -- the runner -------------------------------------------------------------------------------------------

class Hang(BaseException):
    pass


# the case running, for the alarm: what to call it, its time limit, and whether the alarm has interrupted it
_CASE: dict[str, Any] = {"name": "", "timeout": 30, "interrupted": False}
DEADLOCKED = 3  # the exit status of a run whose case could not be ended


def _alarm(signum: int, frame: Any) -> None:
    """A case past its time: raise Hang in it, and give its unwinding as long again. A case whose unwinding hangs
    too (a `finally` joining a thread that is stuck for good: threads deadlocked) cannot be ended from Python, so
    the run prints the finding and every thread's stack, and exits with status DEADLOCKED."""
    if _CASE["interrupted"]:
        print(f"FINDING hang {_CASE['name']}: still stuck {_CASE['timeout']} s after the case was interrupted "
              f"(threads deadlocked, the run cannot go on); the stacks of every thread:", flush=True)
        faulthandler.dump_traceback(file=sys.stdout, all_threads=True)
        sys.stdout.flush()
        os._exit(DEADLOCKED)
    _CASE["interrupted"] = True
    signal.alarm(_CASE["timeout"])
    raise Hang()


def run_case(name: str, case_timeout: int, fn: Callable[[], Any]) -> None:
    """`fn()` under the alarm (`_alarm`), as the case called `name`."""
    _CASE.update(name=name, timeout=case_timeout, interrupted=False)
    signal.alarm(case_timeout)
    try:
        fn()
    finally:
        signal.alarm(0)


def run(cases: int, seed: str, only: list[str] | None, out: Path, case_timeout: int, budget_s: float,
        verbose: bool = False) -> int:
    import logging

    logging.disable(logging.CRITICAL)  # rejections and refusals are logged by design: keep the output readable
    signal.signal(signal.SIGALRM, _alarm)
    with tempfile.TemporaryDirectory(prefix="fastdata-fuzz-") as tmp:
        ctx = Context(Path(tmp))
        chosen = [t for t in targets(ctx) if not only or t.name in only]
        findings, done, start = 0, {t.name: 0 for t in chosen}, time.monotonic()
        for case in range(cases):
            if time.monotonic() - start > budget_s:
                print(f"time budget of {budget_s:.0f} s reached after {case} cases")
                break
            target = chosen[case % len(chosen)]
            rng = random.Random(f"{seed}:{target.name}:{case}")
            label, value = rng.choice(target.seeds())
            name = f"seed={seed} target={target.name} case={case} input={label}"
            try:
                run_case(name, case_timeout, lambda: target.run(rng, label, value))  # noqa: B023 - run at once
            except (Finding, Hang, Exception) as exc:  # noqa: BLE001 - an unexpected exception is a finding too
                findings += 1
                kind = "hang" if isinstance(exc, Hang) else "finding"
                print(f"FINDING {kind} {name}: {type(exc).__name__}: {exc}")
                print("".join(traceback.format_exception(exc.__cause__ or exc)[-14:]), flush=True)
                _save(out, seed, target.name, case, ctx)
            done[target.name] += 1
        ctx.close()
        if verbose:
            for (step, outcome), n in sorted(OUTCOMES.items()):
                print(f"  {step:28s} {outcome:36s} {n:6d}")
        print(f"{sum(done.values())} cases ({', '.join(f'{k} {v}' for k, v in done.items())}), seed {seed}, "
              f"{findings} finding(s), {time.monotonic() - start:.1f} s")
    return 1 if findings else 0


def _save(out: Path, seed: str, target: str, case: int, ctx: Context) -> None:
    """Keep what the failing case fed in, for reproduction (`--targets T --seed S` replays the same cases)."""
    dest = out / f"{target}-{seed}-{case}"
    dest.mkdir(parents=True, exist_ok=True)
    for path in (ctx.work / "case.img", ctx.case_dir, ctx.work / "case-dicom", ctx.work / "hf-table",
                 ctx.work / "labeled-text"):
        if path.is_file():
            shutil.copy(path, dest)
        elif path.is_dir():
            shutil.copytree(path, dest / path.name, dirs_exist_ok=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", type=int, default=300, help="cases in all, dealt round robin to the targets")
    p.add_argument("--seed", default="0", help="a seed, or 'random' (printed, so a finding can be replayed)")
    p.add_argument("--targets", help="comma list of targets (default: all)")
    p.add_argument("--out", type=Path, default=Path("fuzz-findings"), help="where failing inputs are saved")
    p.add_argument("--case-timeout", type=int, default=30, help="seconds before a case counts as a hang")
    p.add_argument("--budget", type=float, default=float("inf"), help="stop starting cases after this many seconds")
    p.add_argument("-v", "--verbose", action="store_true", help="print how far the cases got, step by step")
    args = p.parse_args(argv)
    seed = str(random.SystemRandom().randrange(1 << 32)) if args.seed == "random" else args.seed
    only = args.targets.split(",") if args.targets else None
    return run(args.cases, seed, only, args.out, args.case_timeout, args.budget, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
