"""What a conversion takes from its source (converters/survey.py): each split is shuffled by its own name."""

from __future__ import annotations

from converters.engine import ConvertConfig
from converters.kind import Discovery
from converters.plan import shuffle_split
from converters.sample import WorkItem
from converters.survey import prepared


class _Plain:  # a kind that names its sources as they are (no `pseudonymize`)
    name = "plain"


def test_each_split_is_shuffled_with_its_own_name_and_the_seed():
    items = {s: [WorkItem(split=s, rel=f"{i:02d}.jpg", source=f"/src/{i:02d}.jpg") for i in range(20)]
             for s in ("train", "val")}
    discovery = Discovery({**items, "test": []}, (), [], "split")
    same, paths, shuffled = prepared(_Plain(), discovery, None, ConvertConfig(seed=7))
    assert same is discovery and paths == {} and set(shuffled) == {"train", "val"}  # an empty split: none
    for s in ("train", "val"):
        assert shuffled[s] == shuffle_split(items[s], seed=7, split=s)
        assert [it.position for it in shuffled[s]] == list(range(20))
    assert [it.rel for it in shuffled["train"]] != [it.rel for it in shuffled["val"]]
