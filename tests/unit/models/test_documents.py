"""Configuration documents: JSON or MessagePack recognised by their first byte, readable errors."""

import msgspec
import pytest

from models.documents import decode_document, missing_field, split_validation_error


class DocumentError(Exception):
    pass


@pytest.mark.parametrize("value", [{"name": "a", "n": 1}, [{"name": "a"}, {"name": "b"}]])
def test_json_and_msgpack_bytes_decode_to_the_same_builtins(value):
    as_json = msgspec.json.encode(value)
    assert decode_document(as_json, DocumentError, "rule") == value
    assert decode_document(b"  \n" + as_json, DocumentError, "rule") == value
    assert decode_document(as_json.decode(), DocumentError, "rule") == value
    assert decode_document(msgspec.msgpack.encode(value), DocumentError, "rule") == value


def test_decoded_values_pass_through_untouched():
    value = {"name": "a"}
    assert decode_document(value, DocumentError, "rule") is value


def test_undecodable_bytes_raise_the_callers_error_naming_the_document():
    with pytest.raises(DocumentError, match=r"^invalid cohort: undecodable document: "):
        decode_document(b'{"name": ', DocumentError, "cohort")


class Shape(msgspec.Struct):
    name: str
    weight: int


def test_validation_errors_split_into_problem_and_path():
    with pytest.raises(msgspec.ValidationError) as caught:
        msgspec.convert({"name": "a", "weight": "x"}, Shape)
    assert split_validation_error(caught.value) == ("Expected `int`, got `str`", "weight")
    with pytest.raises(msgspec.ValidationError) as caught:
        msgspec.convert({"name": "a"}, Shape)
    problem, path = split_validation_error(caught.value)
    assert path == ""
    assert missing_field(problem) == "weight"
    assert missing_field("Expected `int`, got `str`") is None
