"""Shared fixtures. Builders live in tests/helpers.py so test modules can import them directly."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from conftest_remote import s3, s3_endpoint  # noqa: E402, F401  (fixtures for every test module)
from helpers import PHOTOS, copy_photos, make_image_tree  # noqa: E402


@pytest.fixture
def small_tree(tmp_path: Path) -> Path:
    """3 classes x 4 synthetic 64x48 JPEGs (already baseline RGB and small: copied byte for byte)."""
    return make_image_tree(tmp_path / "src", classes=3, per_class=4)


@pytest.fixture(scope="session")
def photo_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All real photos bundled in tests/data/photos dealt into 3 class folders (read-only use)."""
    if not PHOTOS.is_dir():
        pytest.fail(f"bundled data missing: {PHOTOS}")
    return copy_photos(tmp_path_factory.mktemp("photos") / "src", classes=3)
