"""What a user may name as shards (fastdata/sources.py): brace patterns are counted before they are expanded.
braceexpand builds each range whole (itertools.product takes its inputs whole), so a range with a digit too many
('{000000000..999999999}') used to fill memory until the kernel killed the process."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from braceexpand import braceexpand

from fastdata.errors import ManifestError
from fastdata.sources import MAX_NAMES, _range_sizes, expand


@pytest.mark.parametrize("pattern", [
    "a-{000000..000099}.tar", "{0..9}-{1..10..2}", "{0..9..0}x", "{9..0..3}", "{-3..3}", "x{a,b}{0..4}",
    "{0..999}/{0..999}", "{a,b,c}-{x,y}-{0..1}",
])
def test_the_count_before_expansion_equals_braceexpands(pattern):
    assert _range_sizes(pattern) == len(list(braceexpand(pattern)))


@pytest.mark.parametrize("pattern", [
    "shards/train-{000000000..999999999}.tar",
    "shards/{0..1000}-{0..1000}.tar",
    "shards/" + "{a,b}" * 20 + ".tar",  # 2**20 names
    "shards/{0.." + "9" * 5000 + "}.tar",  # past int()'s digit limit as well
])
def test_a_range_past_a_million_files_is_refused_at_once(tmp_path: Path, pattern):
    start = time.perf_counter()
    with pytest.raises(ManifestError, match=f"names more than {MAX_NAMES:,} files; check the range"):
        expand(str(tmp_path / pattern))
    assert time.perf_counter() - start < 1.0


def test_a_range_within_the_limit_still_names_its_files(tmp_path: Path):
    for i in range(3):
        (tmp_path / f"s-{i:06d}.tar").write_bytes(b"")
    assert expand(str(tmp_path / "s-{000000..000002}.tar")) == [tmp_path / f"s-{i:06d}.tar" for i in range(3)]
    with pytest.raises(ManifestError, match="names 1 file"):
        expand(str(tmp_path / "s-{000000..000003}.tar"))
