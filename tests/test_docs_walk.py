"""A newcomer's walk through the documentation, checked: every command and Python block of README.md and
docs/*.md runs as written (tests/docs_walk.py) on the bundled data, laid out under the names the docs use:

  ~/data/imagenet/{train,val}/<class>/*.jpg   the bundled photos (HOME is the sandbox's home/)
  ~/data/wds/shards-00000{0,1,2}.tar          WebDataset shards of them, written by webdataset's ShardWriter
  ~/data/coco/train2017/*.jpg, ~/data/coco/captions_train2017.json   the photos and their bundled COCO captions
  ~/data/coco/dataset_coco.json               the same captions as Karpathy's split file
  ~/data/coco/prompts.csv                     their first captions as a table of `img_path,description`
  ~/data/laion/00000.tar                      img2dataset-style shard (jpg, txt, json) of the captioned photos
  ~/hf/beans/data/{train,validation}-00000-of-00001.parquet   the photos as a Hugging Face Hub download
  ~/hf/pets/{train,test}/*.jpg, metadata.jsonl   the photos labelled by Hugging Face ImageFolder metadata
  ~/roboflow/pets.v1i.multiclass/{train,valid}/   the photos as Roboflow's export, each folder's _classes.csv
  ILSVRC/Data/CLS-LOC/{train/<class>/,val/}, LOC_val_solution.csv   12 photos as Kaggle's ImageNet (val loose)
  ~/pets/images/<Breed>_<n>.jpg, ~/dogs-vs-cats/{train/<cat|dog>.<n>.jpg,test/<n>.jpg}   classes in file names
  ~/food-101/images/<class>/<n>.jpg, ~/food-101/meta/{train,test}.txt   splits in list files (Food-101's download)
  ~/kaggle/intel-image-classification/seg_{train,test,pred}/seg_.../   Kaggle's nested split folders
  ~/dtd/images/<class>/, ~/dtd/labels/{train,val,test}{1,3}.txt   the photos as DTD's download
  ~/chestxray14/images/<n>_000.png, ~/chestxray14/Data_Entry_2017.csv   greyscale PNGs, several findings an image
  ~/data/coco/annotations/instances_train2017.json   the photos' objects, in COCO's shape (several classes each)
  ~/data/VOCdevkit/VOC2007/, ~/data/celeba/, ~/data/CheXpert-v1.0-small/, ~/data/mimic-cxr-jpg/2.0.0/,
  ~/data/fgvc-aircraft-2013b/, ~/data/CUB_200_2011/, ~/data/oxford-iiit-pet/, ~/data/stanford-dogs/,
  ~/data/gtsrb/, ~/kaggle/gtsrb/, ~/data/stanford_cars/, ~/data/sun/{SUN397,Partitions}/, ~/data/places365/,
  ~/data/caltech101/, ~/data/inat2018/, ~/data/cars-release/, ~/data/ilsvrc/
                                              the photos in those datasets' layouts
  ~/hf/flickr30k/data/test-00000-of-00001.parquet   the captioned photos as the Hub's Flickr30k: caption lists, split
  corpus/<class>/<class>.txt, tokenizer.json  the fortunes and the BERT tokenizer
  scans/                                      a real CT series from pydicom's bundled files
  ~/data/Task01_Brain/{imagesTr,labelsTr}/, dataset.json   nibabel's bundled real MR brain as a Decathlon task
  ~/data/Totalsegmentator_dataset_v201/s0000/{ct.nii,segmentations/}, meta.csv   the same brain, two structures
  ~/data/totalseg/s0000/segmentations/{liver,milz}.nii.gz   the same, its structures named as organs
  ~/data/BraTS2020/BraTS20_Training_001/..._{t1,t2,seg}   the same brain as a BraTS case of two modalities
  ~/data/LUNA16/subset0/<series UID>.{mhd,raw}   the same brain as LUNA16's MetaImage files (SimpleITK wrote them)
  ~/data/slicer-cases/case01/{CT,Segmentation.seg}.nrrd   the same brain and its mask as 3D Slicer saves them
  ~/data/oasis1/disc1/OAS1_0001_MR1/RAW/..._anon.{hdr,img}   the same brain as OASIS-1's Analyze 7.5 pairs
  ~/data/freesurfer-cases/subj01/{brain,seg}.mgz   the same brain and its mask as FreeSurfer's MGH files
  ~/data/freesurfer-subjects/subj01/{brain,T1,aseg}.mgz   the same, as a FreeSurfer subject names them
  ~/data/la2018/case01/{lgemri,laendo}.nrrd   the same brain and its mask as LA-2018 names them
  ~/data/brainweb/normal/{t1_icbm_normal_1mm_pn3_rf20,phantom_1.0mm_normal_crsp}.mnc.gz   the same, as BrainWeb's
  shards/, tokens/, volumes/                  those converted with the commands the README shows
  s3://bucket/                                an empty bucket on moto's S3 server on 127.0.0.1 (AWS_* set)

Blocks marked `<!-- not run: reason -->` are skipped; the reasons are listed in the test's output.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest_adopt import shardwriter_shards
from conftest_pairs import COCO_CAPTIONS
from conftest_text import FORTUNES, TOKENIZER
from docs_walk import ELSEWHERE, _commands, command_text, steps
from helpers import PHOTOS, with_features
from test_caltech101 import _caltech
from test_celeba import _torchvision_layout
from test_chexpert import _chexpert
from test_cub import _cub
from test_fgvc_aircraft import _aircraft
from test_gtsrb import _gtsrb, _kaggle
from test_imagenet_archives import _imagenet
from test_inaturalist import _inat
from test_mimic_cxr import _mimic
from test_oxford_pet import _pets
from test_places365 import _places
from test_stanford_cars import _cars, _release
from test_stanford_dogs import _dogs
from test_sun397 import _sun
from test_voc import _voc

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from nifti_sample import (  # noqa: E402
    afni_subjects,
    brain_task,
    brainweb_normal,
    channels_task,
    freesurfer_cases,
    freesurfer_subjects,
    kirby21_scans,
    la2018_cases,
    metaimage_task,
    oasis_scans,
    slicer_cases,
    structures_task,
)

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CLASSES = ("indoor", "outdoor", "figures")
SECRET = "docs-walk-salt"


S3_ENV: dict[str, str] = {}


def _env(box: Path) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "HOME": str(box / "home"), "SECRET": SECRET, "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg", "FASTDATA_CACHE": str(box / "cache"), **S3_ENV}


def _run(box: Path, *args: str) -> None:
    subprocess.run(args, cwd=box, env=_env(box), check=True, capture_output=True)


def _captioned(data: Path) -> None:
    """The photos with their bundled COCO captions, as a COCO folder and as an img2dataset shard."""
    import webdataset as wds

    shutil.copytree(PHOTOS, data / "coco" / "train2017")
    shutil.copyfile(COCO_CAPTIONS, data / "coco" / "captions_train2017.json")
    coco = json.loads(COCO_CAPTIONS.read_text())
    names = {im["id"]: im["file_name"] for im in coco["images"]}
    sentences: dict[str, list[dict[str, str]]] = {}
    for ann in coco["annotations"]:
        sentences.setdefault(names[ann["image_id"]], []).append({"raw": ann["caption"]})
    karpathy = [{"filepath": "train2017", "filename": name, "split": ("train", "restval", "val", "test")[i % 4],
                 "sentences": sentences[name]} for i, name in enumerate(sorted(sentences))]
    (data / "coco" / "dataset_coco.json").write_text(json.dumps({"dataset": "coco", "images": karpathy}))
    (data / "coco" / "annotations").mkdir()
    photos = sorted(p.name for p in PHOTOS.glob("*.jpg"))
    (data / "coco" / "annotations" / "instances_train2017.json").write_text(json.dumps({  # COCO's multi-label task
        "images": [{"id": i, "file_name": name} for i, name in enumerate(photos)],
        "annotations": [{"id": k, "image_id": k % len(photos), "category_id": (1, 3, 18)[k % 3]}
                        for k in range(2 * len(photos))],
        "categories": [{"id": 1, "name": "person"}, {"id": 3, "name": "car"}, {"id": 18, "name": "dog"}]}))
    first: dict[str, str] = {}
    for ann in coco["annotations"]:
        first.setdefault(names[ann["image_id"]], ann["caption"])
    (data / "coco" / "prompts.csv").write_text("img_path,description\n" + "".join(  # columns of other names
        f"{name},\"{caption}\"\n" for name, caption in sorted(first.items())))
    (data / "laion").mkdir(parents=True)
    with wds.TarWriter(str(data / "laion" / "00000.tar")) as sink:
        for i, name in enumerate(sorted(first)):
            sink.write({"__key__": f"{i:09d}", "jpg": (PHOTOS / name).read_bytes(), "txt": first[name].encode(),
                        "json": json.dumps({"key": f"{i:09d}", "caption": first[name]}).encode()})


def _hub_download(root: Path) -> None:
    """The photos as `huggingface-cli download` leaves an image dataset: a card and Parquet files with an `Image`
    column and a `ClassLabel` (the layout of tests/test_image_tables.py)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    photos = sorted(PHOTOS.glob("*.jpg"))
    features = {"image": {"_type": "Image"}, "label": {"names": list(CLASSES), "_type": "ClassLabel"}}
    for split, part in (("train", photos[:40]), ("validation", photos[40:])):
        table = pa.table({"image": [{"bytes": p.read_bytes(), "path": p.name} for p in part],
                          "label": pa.array([i % len(CLASSES) for i in range(len(part))], pa.int64())})
        path = root / "data" / f"{split}-00000-of-00001.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(with_features(table, features), path)
    (root / "README.md").write_text("---\nlicense: see tests/data/README.md\n---\n")


def _kaggle_imagenet(box: Path) -> None:
    """12 photos as Kaggle's ImageNet: train in class folders, val loose, val's classes as boxes in
    `LOC_val_solution.csv`, the classes' names in `LOC_synset_mapping.txt`."""
    rows = ["ImageId,PredictionString"]
    for i, p in enumerate(sorted(PHOTOS.glob("*.jpg"))[:12]):
        if i % 4 == 3:
            name = f"ILSVRC2012_val_{i:08d}"
            target = box / "ILSVRC/Data/CLS-LOC/val" / f"{name}.JPEG"
            rows.append(f"{name},{CLASSES[i % 3]} 1 2 30 40 {CLASSES[i % 3]} 5 6 70 80 ")
        else:
            target = box / "ILSVRC/Data/CLS-LOC/train" / CLASSES[i % 3] / p.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, target)
    (box / "LOC_val_solution.csv").write_text("\n".join(rows) + "\n")
    (box / "LOC_synset_mapping.txt").write_text("".join(f"{c} {c.title()}, a class\n" for c in CLASSES))


def _segmented_patients(root: Path) -> None:
    """Two patients as TCIA hands out NSCLC-Radiomics' segmentations: root/LUNG1-00N/CT/ (the phantom series) beside
    root/LUNG1-00N/SEG/1-1.dcm (its sphere as a tumour; conftest_seg.py writes it with highdicom)."""
    from dataclasses import replace

    from conftest_dicom import Phantom, write_phantom
    from conftest_seg import prepared_sources, write_seg

    for n in (1, 2):
        phantom = replace(Phantom(slices=6, rows=16, cols=14, center_mm=(-7.0, -14.0, 46.0), radius_mm=4.0),
                          series_uid=f"{Phantom.series_uid}.{n}")
        case = root / f"LUNG1-00{n}"
        sources = prepared_sources(write_phantom(case / "CT", phantom, seed=n))
        write_seg(case / "SEG" / "1-1.dcm", sources, [("tumor", phantom.hu() > 0)], uid_seed=f"LUNG1-00{n}")


def _outlined_patients(root: Path) -> None:
    """Two patients as TCIA hands out LCTSC's structure sets: root/LCTSC-Test-S1-10N/CT/ (the phantom series) beside
    root/LCTSC-Test-S1-10N/RTSTRUCT/1-1.dcm (conftest_rtstruct.py): a body outline, and three organs inside it that do
    not overlap each other."""
    from dataclasses import replace

    from conftest_dicom import Phantom, write_phantom
    from conftest_rtstruct import on_slice, write_rtstruct

    for n in (1, 2):
        phantom = replace(Phantom(slices=6, rows=16, cols=14), series_uid=f"{Phantom.series_uid}.{n + 10}")
        case = root / f"LCTSC-Test-S1-10{n}"
        write_phantom(case / "CT", phantom, seed=n)

        def box(r0: float, c0: float, size: float, slices=range(6), phantom=phantom):
            return [on_slice(phantom, k, [(r0, c0), (r0, c0 + size), (r0 + size, c0 + size), (r0 + size, c0)])
                    for k in slices]

        write_rtstruct(case / "RTSTRUCT" / "1-1.dcm", phantom.series_uid, [
            ("Body", box(0.5, 0.5, 12.0)), ("Heart", box(2.5, 2.5, 3.0, range(1, 4))),
            ("Esophagus", box(7.5, 7.5, 2.0)), ("SpinalCord", box(9.5, 2.5, 2.0))])


def _organ_files(root: Path) -> None:
    """TotalSegmentator's layout with organs' names: the real brain's case (structures_task) whose two structure
    files are named liver and milz (a site's German name for the spleen)."""
    structures_task(root)
    for old, new in (("bright", "liver"), ("dim", "milz")):
        (root / "s0000" / "segmentations" / f"{old}.nii.gz").rename(root / "s0000" / "segmentations" / f"{new}.nii.gz")


def _named(home: Path) -> None:
    """Photos whose names hold their classes: Oxford-IIIT Pet's `Bengal_3.jpg`, dogs vs cats' `train/cat.0.jpg`
    (and an unlabeled `test/`); Food-101's class folders with their split lists; Intel Image Classification's
    `seg_train/seg_train/<class>/`."""
    for i, p in enumerate(sorted(PHOTOS.glob("*.jpg"))[:12]):
        targets = [home / "pets" / "images" / f"{('Bengal', 'beagle')[i % 2]}_{i}.jpg",
                   home / "dogs-vs-cats" / ("test" if i % 4 == 3 else "train") / f"{('cat', 'dog')[i % 2]}.{i}.jpg"]
        if i % 4 == 3:
            targets[1] = targets[1].with_name(f"{i}.jpg")
        targets.append(home / "food-101" / "images" / ("apple_pie", "ribs")[i % 2] / f"{i}.jpg")
        split = ("seg_train", "seg_train", "seg_test", "seg_pred")[i % 4]  # Intel's, as its zip unpacks
        targets.append(home / "kaggle" / "intel-image-classification" / split / split /
                       ("" if split == "seg_pred" else ("forest", "sea")[i % 2]) / f"{i}.jpg")
        for target in targets:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, target)
    _chest_xrays(home / "chestxray14")
    meta = home / "food-101" / "meta"
    meta.mkdir()
    for split, rest in (("train", (0, 1, 2)), ("test", (3,))):
        (meta / f"{split}.txt").write_text("".join(f"{('apple_pie', 'ribs')[i % 2]}/{i}\n" for i in range(12)
                                                   if i % 4 in rest))


def _chest_xrays(root: Path) -> None:
    """ChestX-ray14 as NIH ships it: greyscale PNGs named `<patient>_<follow-up>.png` and Data_Entry_2017.csv, whose
    `Finding Labels` join an image's findings with bars (`No Finding` one class)."""
    from PIL import Image

    findings = ["Effusion|Mass", "No Finding", "Atelectasis", "Atelectasis|Effusion|Mass", "No Finding", "Effusion",
                "Mass", "No Finding"]
    rows = ["Image Index,Finding Labels,Follow-up #,Patient ID,Patient Age,Patient Gender,View Position"]
    (root / "images").mkdir(parents=True)
    for i, (p, finding) in enumerate(zip(sorted(PHOTOS.glob("*.jpg")), findings)):
        Image.open(p).convert("L").save(root / "images" / f"{i:08d}_000.png")
        rows.append(f"{i:08d}_000.png,{finding},0,{i},58,M,PA")
    (root / "Data_Entry_2017.csv").write_text("\n".join(rows) + "\n")


def _hub_captions(root: Path) -> None:
    """The captioned photos as the Hub's Flickr30k: an `Image` column, a list of captions, a `split` column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    coco = json.loads(COCO_CAPTIONS.read_text())
    names = {im["id"]: im["file_name"] for im in coco["images"]}
    captions: dict[str, list[str]] = {}
    for ann in coco["annotations"]:
        captions.setdefault(names[ann["image_id"]], []).append(ann["caption"])
    files = sorted(captions)
    table = pa.table({"image": [{"bytes": (PHOTOS / f).read_bytes(), "path": f} for f in files],
                      "caption": [captions[f] for f in files],
                      "split": ["val" if i % 5 == 4 else "train" for i in range(len(files))]})
    string = {"dtype": "string", "_type": "Value"}
    features = {"image": {"_type": "Image"}, "caption": {"feature": string, "_type": "List"}, "split": string}
    path = root / "data" / "test-00000-of-00001.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(with_features(table, features), path)


def _roboflow(root: Path) -> None:
    """The photos as Roboflow's multi-label classification export: train/ and valid/, each with its `_classes.csv`
    of one-hot columns."""
    tables: dict[str, str] = {}
    for i, p in enumerate(sorted(PHOTOS.glob("*.jpg"))):
        folder = "valid" if i % 5 == 4 else "train"
        (root / folder).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, root / folder / p.name)
        tables[folder] = tables.get(folder, "filename, dog, cat\n") + f"{p.name},{i % 2},{i // 2 % 2}\n"
    for folder, text in tables.items():
        (root / folder / "_classes.csv").write_text(text)


def _dtd_partitions(root: Path) -> None:
    """The photos as DTD's download: `images/<class>/`, partitions 1 and 3 of its split lists."""
    rows: dict[str, list[str]] = {"train": [], "val": [], "test": []}
    for i, p in enumerate(sorted(PHOTOS.glob("*.jpg"))[:12]):
        entry = f"{('banded', 'dotted')[i % 2]}/{p.name}"
        (root / "images" / entry).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, root / "images" / entry)
        rows[("train", "train", "val", "test")[i % 4]].append(entry)
    (root / "labels").mkdir()
    for split, entries in rows.items():
        for fold in (1, 3):
            (root / "labels" / f"{split}{fold}.txt").write_text("".join(f"{e}\n" for e in entries))


def _hf_imagefolder(root: Path) -> None:
    """The photos as a folder for `load_dataset("imagefolder")`: train/ and test/, each with a metadata.jsonl of
    `file_name` and `label`."""
    for i, p in enumerate(sorted(PHOTOS.glob("*.jpg"))):
        split = "test" if i % 5 == 4 else "train"
        (root / split).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, root / split / p.name)
        with open(root / split / "metadata.jsonl", "a") as f:
            f.write(json.dumps({"file_name": p.name, "label": CLASSES[i % 3]}) + "\n")


@pytest.fixture(scope="session")
def base_box(tmp_path_factory: pytest.TempPathFactory, s3_endpoint: str) -> Path:
    S3_ENV.update(AWS_ENDPOINT_URL=s3_endpoint, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                  AWS_DEFAULT_REGION="us-east-1", AWS_REGION="us-east-1")
    import boto3

    boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1", aws_access_key_id="testing",
                 aws_secret_access_key="testing").create_bucket(Bucket="bucket")
    box = tmp_path_factory.mktemp("docs-walk")
    for i, p in enumerate(sorted(PHOTOS.glob("*.jpg"))):
        target = box / "home" / "data" / "imagenet" / ("val" if i % 5 == 4 else "train") / CLASSES[i % 3] / p.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, target)
    shardwriter_shards(box / "home" / "data" / "wds", count=24, per_shard=8, pattern="shards-%06d.tar")
    _captioned(box / "home" / "data")
    _hub_download(box / "home" / "hf" / "beans")
    _hub_captions(box / "home" / "hf" / "flickr30k")
    _hf_imagefolder(box / "home" / "hf" / "pets")
    _roboflow(box / "home" / "roboflow" / "pets.v1i.multiclass")
    _kaggle_imagenet(box)
    _named(box / "home")
    _voc(box / "home" / "data")
    _torchvision_layout(box / "home" / "data")
    _chexpert(box / "home" / "data")
    _mimic(box / "home" / "data")
    _aircraft(box / "home" / "data")
    _cub(box / "home" / "data")
    _pets(box / "home" / "data")
    _dogs(box / "home" / "data" / "stanford-dogs")
    _gtsrb(box / "home" / "data")
    _cars(box / "home" / "data")
    _release(box / "home" / "data" / "cars-release")
    _sun(box / "home" / "data" / "sun")
    _places(box / "home" / "data" / "places365")
    _caltech(box / "home" / "data")
    _inat(box / "home" / "data" / "inat2018")
    _imagenet(box / "home" / "data" / "ilsvrc")
    _kaggle(box / "home" / "kaggle" / "gtsrb")
    _dtd_partitions(box / "home" / "dtd")
    for f in sorted(FORTUNES.iterdir()):
        (box / "corpus" / f.name).mkdir(parents=True)
        shutil.copyfile(f, box / "corpus" / f.name / f"{f.name}.txt")
    shutil.copyfile(TOKENIZER, box / "tokenizer.json")
    from pydicom.data import get_testdata_file

    series = Path(get_testdata_file("dicomdirtests/77654033/CT2/17136", download=False)).parents[1]
    shutil.copytree(series, box / "scans")
    brain_task(box / "home" / "data" / "Task01_Brain")
    structures_task(box / "home" / "data" / "Totalsegmentator_dataset_v201")
    channels_task(box / "home" / "data" / "BraTS2020")
    metaimage_task(box / "home" / "data" / "LUNA16")
    slicer_cases(box / "home" / "data" / "slicer-cases")
    oasis_scans(box / "home" / "data" / "oasis1" / "disc1")
    freesurfer_cases(box / "home" / "data" / "freesurfer-cases")
    freesurfer_subjects(box / "home" / "data" / "freesurfer-subjects")
    la2018_cases(box / "home" / "data" / "la2018")
    brainweb_normal(box / "home" / "data" / "brainweb")
    afni_subjects(box / "home" / "data" / "afni")
    kirby21_scans(box / "home" / "data" / "kirby21")
    _segmented_patients(box / "home" / "data" / "nsclc")
    _outlined_patients(box / "home" / "data" / "lctsc")
    _organ_files(box / "home" / "data" / "totalseg")
    fastdata = str(Path(sys.executable).parent / "fastdata")
    _run(box, fastdata, "convert", str(box / "home/data/imagenet"), "shards/", "--no-progress")
    _run(box, fastdata, "convert", "corpus/", "tokens/", "--tokenizer", "tokenizer.json", "--separator", "%",
         "--no-progress")
    _run(box, fastdata, "convert", "scans/", "volumes/", "--kind", "dicom", "--spacing", "1.0", "--salt", SECRET,
         "--no-progress")
    return box


@pytest.mark.parametrize("doc", DOCS, ids=[p.name for p in DOCS])
def test_every_command_of_the_doc_runs_as_written(doc: Path, base_box: Path, tmp_path: Path):
    plan = steps(doc.read_text(encoding="utf-8"))
    skipped = [f"line {s.line}: {s.reason}" for s in plan if s.kind == "skip"]
    todo = [s.__dict__ for s in plan if s.kind != "skip"]
    if skipped:
        print(f"{doc.name}: not run:\n  " + "\n  ".join(skipped))
    if not todo:
        pytest.skip(f"{doc.name} has no runnable block")
    box = tmp_path / "box"
    shutil.copytree(base_box, box, symlinks=True)
    (box / "steps.json").write_text(json.dumps(todo))
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "docs_walk.py"), "steps.json"], cwd=box,
                          env=_env(box), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{doc.name}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    print(f"{doc.name}: slowest steps:\n  " + "\n  ".join(_slowest(done.stdout)))


def _slowest(stdout: str, count: int = 5) -> list[str]:
    timed = [ln[4:] for ln in stdout.splitlines() if ln.startswith("=== line ")]
    return sorted(timed, key=lambda t: -float(t.rsplit(": ", 1)[1].split()[0]))[:count]


def test_every_skipped_block_says_why_and_code_blocks_are_recognised():
    for doc in DOCS:
        for step in steps(doc.read_text(encoding="utf-8")):
            if step.kind == "skip":
                assert len(step.reason) > 10, f"{doc.name} line {step.line}: say why the block is not run"


def test_a_block_left_to_another_page_is_run_there_as_written():
    left = 0
    for doc in DOCS:
        for step in steps(doc.read_text(encoding="utf-8")):
            other = ELSEWHERE.match(step.reason) if step.kind == "skip" else None
            if other:
                there = {command_text(s.text) for s in steps((ROOT / other.group(1)).read_text(encoding="utf-8"))
                         if s.kind == "shell"}
                for command in _commands(step.text) or [step.text]:
                    left += 1
                    assert command_text(command) in there, f"{doc.name} line {step.line}: {other.group(1)} does " \
                                                           f"not run {command!r}"
    assert left >= 2  # the README's bench and doctor lines


def test_the_extractor_finds_commands_python_and_markers():
    text = ("```\nfastdata info x/   # comment\n```\n\n<!-- not run: needs a GPU machine -->\n```python\n"
            "import torch\n```\n\n```python\nx = 1\n```\n\n```\nDST/manifest.json  written last\n```\n")
    got = [(s.kind, s.text.strip(), s.reason) for s in steps(text)]
    assert got == [("shell", "fastdata info x/   # comment", ""), ("skip", "import torch", "needs a GPU machine"),
                   ("python", "x = 1", "")]
    with pytest.raises(ValueError, match="mixes commands"):
        steps("```\nfastdata info x/\nthen look at it\n```\n")
