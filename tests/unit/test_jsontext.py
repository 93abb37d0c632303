"""jsontext.loads reads JSON as json.loads does — the same values, the same exceptions and
messages — without importing json for a text it reads whole (issue 23: start-up)."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from kernellab import jsontext

TEXTS = ['{"a": [1, 2.5, -3e2, true, false, null], "b": {"c": "\\u00e9\\n"}}', ' \n\t[1, {"x": []}] \r\n',
         '"just a string"', "12", '{"a": 1, "a": 2}', "[NaN, Infinity, -Infinity]", "[1e400, -0.0]"]
BAD = ["", "   ", "{", '{"a": 1} x', '{"a": 1}}', "[1,]", "\ufeff[1]", '"tab\there"', "[01]", "{'a': 1}",
       '{"a" 1}', "[1] [2]", "nul"]


@pytest.mark.parametrize("text", TEXTS)
def test_values_are_json_s(text: str) -> None:
    got, expected = jsontext.loads(text), json.loads(text)
    assert json.dumps(got) == json.dumps(expected)  # NaN compares unequal to itself; its text does not
    assert type(got) is type(expected)


@pytest.mark.parametrize("text", BAD)
def test_errors_are_json_s(text: str) -> None:
    with pytest.raises(ValueError) as expected:
        json.loads(text)
    with pytest.raises(ValueError) as got:
        jsontext.loads(text)
    assert type(got.value) is type(expected.value) and str(got.value) == str(expected.value)
    with pytest.raises(jsontext.DecodeError):
        jsontext.loads(text)


def test_parse_int_is_used_and_its_exception_comes_through() -> None:
    class TooLong(ValueError):
        pass

    def parse_int(digits: str) -> int:
        if len(digits) > 3:
            raise TooLong(digits)
        return int(digits) * 10

    assert jsontext.loads("[1, 22, 2.5]", parse_int=parse_int) == [10, 220, 2.5]
    with pytest.raises(TooLong):
        jsontext.loads('{"n": 12345}', parse_int=parse_int)
    assert math.isnan(jsontext.loads("NaN"))


def test_reading_imports_no_json() -> None:
    code = ("import sys\nfrom kernellab import jsontext\nv = jsontext.loads('{\"a\": [1, 2]}')\n"
            "print(v, 'json' in sys.modules, 'json.decoder' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "{'a': [1, 2]} False False"
