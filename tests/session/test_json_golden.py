"""Every number of the session commands' ``--json`` output is what it was before the rework.

The golden file (``data/session_json_before.json``) was written once by
``golden_sessions.py`` with the session analysis as it stood before it moved onto the
comparison foundation (typed verdicts, the shared Holm engine); words may change, numbers
may not.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from golden_sessions import golden_outputs

from evalband.analysis import SliceVerdict
from evalband.analysis._verdicts import Standing

BEFORE = Path(__file__).parent / "data" / "session_json_before.json"
SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schemas"


def numbers(value: Any, path: str = "") -> Iterator[tuple[str, float | int | bool | None]]:
    """Every numeric (and boolean / null) leaf with its path; strings are left out."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from numbers(item, f"{path}/{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from numbers(item, f"{path}/{i}")
    elif not isinstance(value, str):
        yield path, value


@pytest.mark.slow
def test_every_number_of_the_json_output_is_unchanged(tmp_path: Path) -> None:
    before = json.loads(BEFORE.read_text())
    after = golden_outputs(tmp_path)
    assert sorted(after) == sorted(before)
    for command, old in before.items():
        new = dict(numbers(after[command]))
        old_numbers = list(numbers(old))
        assert len(old_numbers) > 100, command  # the fixture is not trivially small
        for path, value in old_numbers:
            assert path in new, f"{command}: {path} is gone"
            assert new[path] == value, f"{command}: {path} was {value!r}, now {new[path]!r}"
        # today's output is typed: it validates against its schema (one verdict vocabulary)
        name = "session-drift" if command.startswith("drift") else "session-analysis"
        schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))
        jsonschema.validate(after[command], schema)
        with pytest.raises(jsonschema.ValidationError, match="verdict|sentence"):
            jsonschema.validate(old, schema)  # the untyped output had no verdicts


def test_the_schemas_speak_the_one_verdict_vocabulary() -> None:
    compare = json.loads((SCHEMAS / "comparison.schema.json").read_text(encoding="utf-8"))
    slice_words = set(compare["$defs"]["slice_verdict"]["enum"])
    assert compare["$defs"]["slice_comparison"]["properties"]["verdict"] == {
        "$ref": "#/$defs/slice_verdict", "description": compare["$defs"]["slice_comparison"][
            "properties"]["verdict"]["description"]}
    assert slice_words == {v.value for v in SliceVerdict}
    for name in ("session-analysis", "session-drift"):
        schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))
        assert set(schema["$defs"]["slice_verdict"]["enum"]) == slice_words, name
    analysis = json.loads((SCHEMAS / "session-analysis.schema.json").read_text(encoding="utf-8"))
    assert set(analysis["$defs"]["standing"]["enum"]) == {s.value for s in Standing}
