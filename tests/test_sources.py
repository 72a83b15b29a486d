"""What a user may name as shards (fastdata/sources.py): brace patterns are counted before they are expanded.
braceexpand builds each range whole (itertools.product takes its inputs whole), so a range with a digit too many
('{000000000..999999999}') used to fill memory until the kernel killed the process."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from braceexpand import braceexpand

from fastdata.errors import ManifestError
from fastdata.sources import MAX_NAMES, _range_sizes, brace_names, expand


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
    with pytest.raises(ManifestError, match=rf"names more than {MAX_NAMES:,} files; check the range \(a digit too "
                                            r"many\?\)$"):
        expand(str(tmp_path / pattern))
    assert time.perf_counter() - start < 5.0  # expanding would take minutes; a busy machine, a second


def test_a_range_of_exactly_a_million_names_is_expanded():
    assert len(brace_names("x{000000..999999}")) == MAX_NAMES  # the bound itself (about a second)


def test_a_source_list_names_what_it_holds_that_is_no_path():
    with pytest.raises(TypeError) as err:
        expand(["shards/a.tar", 5])
    assert str(err.value) == "a source list holds paths or patterns, got int: 5"


def test_a_range_within_the_limit_still_names_its_files(tmp_path: Path):
    for i in range(3):
        (tmp_path / f"s-{i:06d}.tar").write_bytes(b"")
    assert expand(str(tmp_path / "s-{000000..000002}.tar")) == [tmp_path / f"s-{i:06d}.tar" for i in range(3)]
    with pytest.raises(ManifestError, match="names 1 file"):
        expand(str(tmp_path / "s-{000000..000003}.tar"))


def test_a_remote_brace_pattern_past_a_million_names_is_refused_before_any_request():
    """A URL's range was expanded whole (braceexpand, no count first): '{000000..999999999}' ran until killed."""
    import fastdata

    start = time.perf_counter()
    with pytest.raises(ManifestError, match=f"names more than {MAX_NAMES:,} files; check the range"):
        fastdata.loader("http://127.0.0.1:9/ds/train-{000000..999999999}.tar", batch_size=2)
    assert time.perf_counter() - start < 5.0  # expanding would take minutes; a busy machine, a second


@pytest.mark.parametrize("url", ["s3://", "http://", "https:///ds/", "gs://"])
def test_a_url_without_a_host_or_bucket_is_refused_naming_it(url):
    """'s3://' reached obstore, which answered with a page of its debug output; 'http://' urllib3's 'empty host'."""
    import fastdata

    with pytest.raises(ManifestError, match=rf"^{url!r} names no host or bucket; pass a URL such as"):
        fastdata.loader(url, batch_size=2)


def test_a_file_url_names_the_local_path(tmp_path: Path):
    for i in range(2):
        (tmp_path / f"s {i}.tar").write_bytes(b"")
    assert expand(f"file://{tmp_path}/s%200.tar") == [tmp_path / "s 0.tar"]  # percent-decoded, as a URL is
    assert expand(f"file://localhost{tmp_path}/s {{0..1}}.tar") == [tmp_path / f"s {i}.tar" for i in range(2)]
    assert expand([f"FILE://{tmp_path}/s 1.tar"]) == [tmp_path / "s 1.tar"]
    with pytest.raises(ManifestError) as err:
        expand("file://server/ds")
    assert str(err.value) == ("'file://server/ds' names a file on host 'server'; a file:// URL names a path on this "
                              "machine (file:///path)")


def test_bytes_are_no_source():
    """bytes were taken for a list of sources and refused as 'got int: 47' (their first byte)."""
    with pytest.raises(TypeError, match=r"^a source is a path, a pattern or a non-empty list of them, got b'/data'"):
        expand(b"/data")
    with pytest.raises(TypeError, match=r"^a source is a path, a pattern or a non-empty list of them, got bytearray"):
        expand(bytearray(b"x"))


@pytest.mark.parametrize("name, why", [("a" * 5000, "File name too long"),
                                       ("ds\x00", "(stat: )?embedded null (byte|character in path)")])  # 3.13: stat
def test_a_path_the_system_cannot_open_is_refused_with_its_reason(tmp_path: Path, name, why):
    """A 5,000-character name raised OSError ENAMETOOLONG from Path.exists(); a NUL passed as 'does not exist'."""
    import fastdata

    with pytest.raises(ManifestError, match=rf"cannot be opened: {why}$"):
        fastdata.loader(str(tmp_path / name), batch_size=2)


@pytest.mark.parametrize(("pattern", "names"), [
    ("{" + "0" * 18 + ".." + "0" * 17 + "1}", 2),  # 18 digits: counted
    ("{0..1" + "0" * 17 + "..1" + "0" * 17 + "}", 2),  # a step of 18 digits: counted, 0 and 10**17
])
def test_ranges_and_steps_of_18_digits_are_counted(pattern, names):
    assert _range_sizes(pattern) == names == len(brace_names(pattern))


@pytest.mark.parametrize("pattern", [
    "{1" + "0" * 18 + "..1" + "0" * 17 + "1}",  # 19 significant digits: past any shard count
    "{0..1" + "0" * 18 + "}",
    "{" + "0" * 1001 + "..1}",  # padding past what is read (int() refuses past 4,300 digits)
])
def test_a_range_of_19_digits_is_refused_uncounted(pattern):
    assert _range_sizes(pattern) == MAX_NAMES + 1
    with pytest.raises(ManifestError, match="names more than 1,000,000 files"):
        brace_names(pattern)


@pytest.mark.parametrize(("pattern", "names"), [
    ("{0..1000000..1" + "0" * 21 + "}", 1),  # not 1,000,001: the step is no stride of 1
    ("{0..1" + "0" * 17 + "..1" + "0" * 18 + "}", 1),  # a step of 19 digits past a range of 18: the first name
    ("{" + "0" * 19 + ".." + "0" * 18 + "1}", 2),  # zero-padded to 19 places: two names, counted
])
def test_a_step_past_18_digits_names_the_first_and_padding_is_no_digit(pattern, names):
    assert _range_sizes(pattern) == names == len(brace_names(pattern))


def test_a_zero_padded_step_of_1_is_counted_as_1_not_as_19_digits():
    """`{0..999999999999..0000000000000000001}` was counted by the step's length as a million names at most, and
    braceexpand was then left to build 10**12 of them: the process hung, growing."""
    pattern = "{0..999999999999..0000000000000000001}"
    assert _range_sizes(pattern) == 10**12
    started = time.monotonic()
    with pytest.raises(ManifestError, match="names more than 1,000,000 files"):
        brace_names(pattern)
    assert time.monotonic() - started < 5  # expanding would never end; a busy machine, a second


@pytest.mark.parametrize(("count", "shown"), [
    (3, "s-0.tar, s-1.tar, s-2.tar"),
    (4, "s-0.tar, s-1.tar, s-2.tar and 1 more"),
    (6, "s-0.tar, s-1.tar, s-2.tar and 3 more"),
])
def test_missing_files_of_a_pattern_are_counted_and_the_first_three_named(tmp_path: Path, monkeypatch, count, shown):
    monkeypatch.chdir(tmp_path)
    pattern = f"s-{{0..{count - 1}}}.tar"
    with pytest.raises(ManifestError) as err:
        expand(pattern)
    assert str(err.value) == (f"the pattern {pattern!r} names {count} file(s) that do not exist ({shown}); check the "
                              "range and the folder")


def test_a_glob_matches_folders_and_a_relative_pattern_begins_with_its_own_characters(tmp_path: Path, monkeypatch):
    """Folders a glob matches are matched (only a folder that exists is read by its name), and a pattern relative to
    the working directory may begin with `*`, `[` or `{`."""
    for folder in ("d1", "d2", "d3"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.tar").write_bytes(b"")
    assert expand(str(tmp_path / "d[12]" / "x.tar")) == [tmp_path / "d1" / "x.tar", tmp_path / "d2" / "x.tar"]
    monkeypatch.chdir(tmp_path / "d1")
    (tmp_path / "d1" / "y.tar").write_bytes(b"")
    assert expand("*.tar") == [Path("x.tar"), Path("y.tar")]
    assert expand("[xy].tar") == [Path("x.tar"), Path("y.tar")]
    assert expand("{x,y}.tar") == [Path("x.tar"), Path("y.tar")]


@pytest.mark.parametrize("spec", ["pipe:curl -s -L https://host/shard-{000..009}.tar",
                                  ["pipe:aws s3 cp s3://b/x.tar -"]])
def test_a_webdataset_pipe_source_is_refused_with_what_to_pass_instead(spec):
    """It was 'names 10 file(s) that do not exist (pipe:curl -s -L https://host/shard-000.tar, ...)'."""
    shown = spec if isinstance(spec, str) else spec[0]
    with pytest.raises(ManifestError) as err:
        expand(spec)
    assert str(err.value) == (f"{shown!r}: WebDataset's pipe: sources stream a tar through a command, and fastdata "
                              "reads shards at random offsets: pass the URL the command reads (s3://, gs://, az://, "
                              "https://, with a brace pattern) or a local path")


def test_a_local_file_named_like_a_pipe_source_is_that_file(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pipe:x.tar").write_bytes(b"")
    assert expand("pipe:x.tar") == [Path("pipe:x.tar")]


def test_a_missing_plain_name_is_no_pattern(tmp_path: Path):
    """Only `*`, `?` and `[` make a glob: a plain name that is not there is itself (refused later as missing)."""
    assert expand(str(tmp_path / "X-0.tar")) == [tmp_path / "X-0.tar"]


@pytest.mark.parametrize(("spec", "parts"), [
    ("a.tar::b-{0..1}.tar", ["a.tar", "b-{0..1}.tar"]),
    ("http://[::1]:8000/a.tar", "http://[::1]:8000/a.tar"),  # an IPv6 host's colons are no separator
    ("http://[::1]:8000/a.tar::http://[::1]:8000/b.tar", ["http://[::1]:8000/a.tar", "http://[::1]:8000/b.tar"]),
    ("a.tar::", "a.tar::"),  # an empty part: no list (then refused as a path that does not exist)
])
def test_sources_joined_with_double_colons(spec, parts):
    from fastdata.sources import split_joined

    assert split_joined(spec) == parts
