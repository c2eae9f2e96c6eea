"""The JSON Schemas of evalband's ``--json`` documents, generated from the result types.

``docs/schemas/`` holds one schema per document: ``comparison.schema.json`` (``evalband compare
--json``, :func:`~evalband.report._document.comparison_document`),
``session-analysis.schema.json`` (``evalband session analyze --json``) and
``session-drift.schema.json`` (``evalband session drift --json``). Each is generated here from
the types that make the document (:func:`evalband.analysis.wire_schemas`: the result models'
declarations, the registered per-slice statistics, the keys a type's ``as_dict`` derives) and
what the document adds in words (the comparison's procedure, sentence, exit status). Written by
``make schemas`` (``python -m evalband.report._schemas docs/schemas``); a test holds the files
equal to what this module generates, so a new statistic or field reaches the schema by the
command, never by hand.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["SCHEMAS", "comparison_schema", "session_analysis_schema", "session_drift_schema",
           "schema_texts", "main"]

_DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _blank_comparison() -> Any:
    """A comparison with every document key (its values are not read): the document's shape."""
    from evalband.analysis import Aggregate, Comparison, Verdict

    return Comparison("b", "c", "pb", "pc", "p", "0" * 64, False, [],
                      Aggregate({}, 0.5, 0.5, 0.0, -0.1, 0.1, "m", 0.95), [], [],
                      Verdict.NO_REGRESSION, [], 0.95)


def comparison_schema() -> dict[str, Any]:
    """The schema of ``evalband compare --json`` for one candidate (``evalband-comparison/2``)."""
    from evalband.analysis import Comparison
    from evalband.analysis._models import wire_schemas
    from evalband.analysis._verdicts import VERDICT_EXIT_CODES
    from evalband.report._document import SCHEMA_ID, comparison_document, procedure_block

    (top,), defs = wire_schemas([Comparison])
    fields = defs.pop(top["$ref"].rsplit("/", 1)[-1])["properties"]
    procedure_types = {"family_size": {"type": "integer", "minimum": 0},
                       "alpha": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
                       "effect": {"type": "number", "minimum": 0, "maximum": 1}}
    sequential_only = {  # compare --sequential: its decision, exit status and fixed design
        "decision": {"enum": ["regression", "improvement", "non-inferior", "futility", None],
                     "description": "the sequential decision (null while undecided)"},
        "exit_code": {"type": "integer", "minimum": 0,
                      "description": "the exit status this decision gives (6: futility)"},
        "design": {"type": "object", "description": "the sequential design fixed before the "
                                                     "data (alpha, effect, power, looks)"},
    }
    blank = _blank_comparison()
    procedure = {
        "type": "object",
        "description": "the decision procedure behind every slice's verdict, in words",
        "properties": {**{key: procedure_types.get(key, {"type": "string"})
                          for key in procedure_block(blank)}, **sequential_only},
        "required": list(procedure_block(blank)),
        "additionalProperties": False,
    }
    derived: dict[str, Any] = {
        "schema": {"const": SCHEMA_ID},
        "procedure": procedure,
        "sentence": {"type": "string", "minLength": 1,
                     "description": "the verdict in one sentence (evalband.report's "
                                    "comparison_sentence)"},
        "exit_code": {"enum": sorted(set(VERDICT_EXIT_CODES.values())),
                      "description": "the exit status of evalband compare for this verdict"},
        "notes": {**fields["notes"],
                  "description": "what a reader must know; the peeking notices come first"},
        "peeking": {**fields["peeking"],
                    "description": "compare on an incomplete run, or on runs already compared "
                                   "at fewer episodes: the notice (also first in notes; stored "
                                   "with the result); empty with --sequential"},
    }
    properties = {key: derived[key] if key in derived else fields[key]
                  for key in comparison_document(blank)}
    properties["slices"] = {**properties["slices"], "minItems": 1}
    properties["panel_fingerprint"] = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
    properties["confidence"] = {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}
    return _document(SCHEMA_ID, "evalband compare --json (one candidate)", properties, defs)


def session_analysis_schema() -> dict[str, Any]:
    """The schema of ``evalband session analyze --json`` (``evalband-session-analysis/1``)."""
    from evalband.analysis._models import wire_schemas
    from evalband.session import SessionAnalysis
    from evalband.session._agreement import InstrumentSummary

    (top, instrument), defs = wire_schemas([SessionAnalysis, InstrumentSummary], {
        "SessionComparison": {"exploratory": (bool, "whether the comparison is exploratory (a "
                                                    "hypothesis, not a finding)")}})
    root = defs.pop(top["$ref"].rsplit("/", 1)[-1])
    properties = {**root["properties"], "stopped_early": {
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "description": "the sentence when session run --until-decided stopped the session where "
                       "its pre-registered comparisons were decided, else null"},
        "instrument": {
        "anyOf": [instrument, {"type": "null"}],
        "description": "a robot session's instrument record (the machine's suggestions against "
                       "the operator's scores, rehearsal trials), else null"}}
    return _document("evalband-session-analysis/1", "evalband session analyze --json",
                     properties, defs)


def session_drift_schema() -> dict[str, Any]:
    """The schema of ``evalband session drift --json`` (``evalband-session-drift/1``)."""
    from evalband.analysis._models import wire_schemas
    from evalband.session._drift import DriftReport

    (top,), defs = wire_schemas([DriftReport])
    root = defs.pop(top["$ref"].rsplit("/", 1)[-1])
    return _document("evalband-session-drift/1", "evalband session drift --json",
                     root["properties"], defs)


def _document(schema_id: str, title: str, properties: dict[str, Any],
              defs: dict[str, Any]) -> dict[str, Any]:
    from evalband.analysis._models import json_refs

    used = json_refs(properties)
    grown = -1
    while grown != len(used):  # definitions used by definitions
        grown = len(used)
        used |= json_refs([defs[name] for name in used if name in defs])
    return {
        "$schema": _DRAFT,
        "$id": schema_id,
        "title": title,
        "description": "generated by `make schemas` (evalband.report._schemas): do not edit",
        "type": "object",
        "required": list(properties),
        "additionalProperties": False,
        "properties": properties,
        "$defs": {name: defs[name] for name in sorted(defs) if name in used},
    }


SCHEMAS: dict[str, Callable[[], dict[str, Any]]] = {
    "comparison.schema.json": comparison_schema,
    "session-analysis.schema.json": session_analysis_schema,
    "session-drift.schema.json": session_drift_schema,
}
"""File name in ``docs/schemas/`` -> the function that generates it."""


def schema_texts() -> dict[str, str]:
    """Every schema file's text, as ``make schemas`` writes it."""
    return {name: json.dumps(make(), indent=2, ensure_ascii=False) + "\n"
            for name, make in SCHEMAS.items()}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m evalband.report._schemas DIR [--check]``: write (or check) the schemas."""
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    folders = [a for a in args if a != "--check"]
    if len(folders) != 1:
        sys.stderr.write("usage: python -m evalband.report._schemas DIR [--check]\n")
        return 2
    folder = Path(folders[0])
    stale = []
    for name, text in schema_texts().items():
        path = folder / name
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(name)
        if not check:
            path.write_text(text, encoding="utf-8")
    if check and stale:
        sys.stderr.write(f"stale: {', '.join(stale)} (run `make schemas`)\n")
        return 1
    for name in stale:
        sys.stdout.write(f"wrote {folder / name}\n")
    return 0


if __name__ == "__main__":  # pragma: no cover - the command
    raise SystemExit(main())
