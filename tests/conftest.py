"""Shared fixtures. Builders live in tests/helpers.py so test modules can import them directly."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

UNDER_MUTMUT = "MUTANT_UNDER_TEST" in os.environ  # mutmut sets it before it imports the tests


@pytest.fixture(autouse=UNDER_MUTMUT)
def _one_intra_op_thread():
    """Under mutmut only: torch on one intra-op thread before and after every test. mutmut runs the tests in its
    own process, then each mutant's in a fork of it, and a fork of a process whose torch ran a parallel region
    blocks for ever in its first parallel op (docs/testing.md), so every mutant such a test reaches "timed out"."""
    import torch

    torch.set_num_threads(1)
    yield
    torch.set_num_threads(1)  # a test that asked for more threads leaves none for the forks

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
