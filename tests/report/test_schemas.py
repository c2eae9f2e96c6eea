"""``docs/schemas/`` is what ``make schemas`` generates, and the documents validate against it."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from evalband.analysis import compare_sequential
from evalband.analysis._compare import _example_comparison, compare_many
from evalband.analysis._statistics import STATISTICS
from evalband.report import comparison_document, comparison_json
from evalband.report._schemas import SCHEMAS, schema_texts

DOCS = Path(__file__).resolve().parents[2] / "docs" / "schemas"


def test_the_schema_files_are_the_generated_ones() -> None:
    texts = schema_texts()
    assert sorted(texts) == sorted(p.name for p in DOCS.glob("*.schema.json"))
    for name, text in texts.items():
        assert (DOCS / name).read_text(encoding="utf-8") == text, (
            f"docs/schemas/{name} is stale: run `make schemas`")


def _schema() -> dict:
    return json.loads((DOCS / "comparison.schema.json").read_text(encoding="utf-8"))


def test_every_registered_statistic_is_a_required_slice_key() -> None:
    slice_def = _schema()["$defs"]["slice_comparison"]
    for stat in STATISTICS:
        assert stat.name in slice_def["required"], stat.name
        assert slice_def["properties"][stat.name]["description"] == stat.doc


def test_fixed_and_sequential_documents_validate_and_broken_ones_do_not() -> None:
    schema = _schema()
    c = _example_comparison()
    doc = json.loads(comparison_json(c))
    jsonschema.validate(doc, schema)
    for bad in ({**doc, "colour": "red"},
                {k: v for k, v in doc.items() if k != "sentence"},
                {**doc, "slices": [{**doc["slices"][0], "verdict": "B is better"}]},
                {**doc, "slices": [{**doc["slices"][0], "unknown_statistic": 1.0}]},
                {**doc, "slices": [{k: v for k, v in doc["slices"][0].items()
                                    if k != STATISTICS[-1].name}]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_a_sequential_document_validates(store) -> None:
    import evalband
    from evalband.labs.hidden_regression import simulate_hidden_regression

    ids = simulate_hidden_regression(store, episodes=120, seed=2)
    base, cand = (evalband.load_run(i, store) for i in ids)
    schema = _schema()
    for c in (compare_sequential(base, cand), compare_sequential(base, cand, max_pairs=60),
              *compare_many(base, [cand, cand])):
        jsonschema.validate(json.loads(json.dumps(comparison_document(c), allow_nan=True)),
                            schema)


def test_the_command_writes_and_checks(tmp_path: Path) -> None:
    from evalband.report._schemas import main

    assert main([str(tmp_path), "--check"]) == 1
    assert main([str(tmp_path)]) == 0
    assert main([str(tmp_path), "--check"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(SCHEMAS)
