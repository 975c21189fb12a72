"""Test ids as a model writes them, matched to the ids the baseline reported (pure logic)."""

from __future__ import annotations

from tools.test_ids import resolve_test_ids

KNOWN = [
    "test_six.py::test_add_metaclass",
    "test_six.py::test_add_metaclass_nested",
    "tests/test_idna.py::IDNATests::test_valid_contexto",
    "tests/test_cache.py::LRUTest::test_delete",
    "tests/test_cache.py::FIFOTest::test_delete",
    "tests/test_other.py::FIFOTest::test_delete",
    "tests/test_param.py::test_sum[1-2]",
    "tests/test_param.py::test_sum[3-4]",
]


def test_known_ids_files_folders_and_parametrised_families_run_as_written() -> None:
    asked = ["test_six.py::test_add_metaclass", "tests/", "tests/test_cache.py"]
    asked += ["tests/test_param.py::test_sum", "tests/test_cache.py::LRUTest"]
    resolved = resolve_test_ids(asked, KNOWN)
    assert resolved.ids == tuple(asked)
    assert not resolved.notes and not resolved.unknown


def test_a_wrong_folder_or_a_missing_class_is_matched_by_file_and_test_name() -> None:
    resolved = resolve_test_ids(
        ["tests/test_six.py::test_add_metaclass_nested", "tests/test_idna.py::test_valid_contexto"],
        KNOWN,
    )
    assert resolved.ids == (
        "test_six.py::test_add_metaclass_nested",
        "tests/test_idna.py::IDNATests::test_valid_contexto",
    )
    assert resolved.notes[0] == (
        "tests/test_six.py::test_add_metaclass_nested is not a test id here; "
        "ran test_six.py::test_add_metaclass_nested instead."
    )
    assert resolved.unknown == ()


def test_a_method_in_several_classes_runs_in_each_class_of_the_file_named() -> None:
    resolved = resolve_test_ids(["tests/test_cache.py::test_delete"], KNOWN)
    assert resolved.ids == (
        "tests/test_cache.py::LRUTest::test_delete",
        "tests/test_cache.py::FIFOTest::test_delete",
    )


def test_a_file_under_the_wrong_folder_is_the_file_of_that_name() -> None:
    resolved = resolve_test_ids(["tests/test_six.py"], KNOWN)
    assert resolved.ids == ("test_six.py",)


def test_an_id_nothing_matches_is_run_as_written_and_named_unknown() -> None:
    resolved = resolve_test_ids(["tests/test_six.py::test_nothing_like_it"], KNOWN)
    assert resolved.ids == ("tests/test_six.py::test_nothing_like_it",)
    assert resolved.unknown == ("tests/test_six.py::test_nothing_like_it",)


def test_the_same_id_asked_many_times_runs_once() -> None:
    # The bundled model once sent one id 40 times in a list.
    resolved = resolve_test_ids(["test_six.py::test_add_metaclass"] * 40, KNOWN)
    assert resolved.ids == ("test_six.py::test_add_metaclass",)


def test_without_known_ids_the_asked_ones_run_as_written() -> None:
    assert resolve_test_ids(["a.py::b", "a.py::b"], []).ids == ("a.py::b",)
