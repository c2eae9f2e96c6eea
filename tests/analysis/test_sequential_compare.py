"""compare --sequential (the anytime-valid verdict) and the peeking notice, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from evalband._api import load_run
from evalband.analysis._sequential import compare_sequential
from evalband.analysis._stored import stored_comparisons
from evalband.cli import main
from evalband.labs.hidden_regression import HARD_SLICE, simulate_hidden_regression
from evalband.report import comparison_document
from evalband.store import open_store


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    db = str(tmp_path_factory.mktemp("seq") / "runs.sqlite")
    with open_store(db) as st:
        base, cand = simulate_hidden_regression(st, episodes=200)
    return db, base, cand


def test_sequential_names_the_hidden_regression(lab: tuple[str, str, str]) -> None:
    db, base_id, cand_id = lab
    with open_store(db) as st:
        base, cand = load_run(base_id, st), load_run(cand_id, st)
    c = compare_sequential(base, cand)
    rows = {r.name: r for r in c.slice_rows}
    hard = rows[f"embodiment={HARD_SLICE}"]
    assert str(c.verdict) == "regression" and hard.verdict == "regressed"
    assert hard.test is not None and hard.test.e_regression >= hard.test.threshold
    assert hard.delta is not None and hard.delta.high < 0
    # undecided slices' confidence sequences contain 0 (compatibility with the test)
    for r in c.slice_rows:
        if r.verdict not in ("regressed", "improved") and r.delta is not None:
            assert r.delta.low <= 0 <= r.delta.high
    # a declared horizon can only lower the threshold
    bounded = compare_sequential(base, cand, max_pairs=200)
    hard_b = {r.name: r for r in bounded.slice_rows}[f"embodiment={HARD_SLICE}"]
    assert hard_b.test is not None and hard_b.test.threshold <= hard.test.threshold


def test_peeking_notice_and_sequential_cli(lab: tuple[str, str, str],
                                           capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    db, base_id, cand_id = lab
    with open_store(db) as st:  # an earlier look at fewer episodes
        st.record_comparison([base_id, cand_id],
                             {"episode_counts": {base_id: 30, cand_id: 30}})
    code, out = run_cli(capsys, "compare", base_id, cand_id, "--store", db, "--json")
    payload = json.loads(out)
    assert code == 4
    assert payload["peeking"] and "already compared at fewer episodes" in payload["peeking"][0]
    assert payload["notes"][0] == payload["peeking"][0]
    jsonschema.validate(payload, json.loads(
        (Path(__file__).parents[2] / "docs/schemas/comparison.schema.json").read_text()))
    html = tmp_path / "cmp.html"
    code, out = run_cli(capsys, "compare", base_id, cand_id, "--store", db, "--report", str(html))
    assert out.splitlines()[0].startswith("PEEKING") and "--sequential" in out.splitlines()[0]
    page = html.read_text()
    assert "PEEKING" in page and page.index("PEEKING") < page.index('class="verdict')
    assert page.count("PEEKING") == len(payload["peeking"])  # the banner, not the notes too
    # the notice is part of the stored result: a later report renders it, first
    with open_store(db) as st:
        (stored,) = stored_comparisons(st, [base_id, cand_id], {})
    assert stored.peeking == payload["peeking"] and "PEEKING" not in " ".join(stored.notes)
    assert comparison_document(stored)["notes"] == payload["notes"]
    again = tmp_path / "again.html"
    assert run_cli(capsys, "report", base_id, cand_id, "--store", db, "--html", str(again))[0] == 0
    later = again.read_text()
    assert later.index(payload["peeking"][0][:40]) < later.index('class="verdict')
    md = tmp_path / "cmp.md"  # Markdown: the notice is its first line, not a footnote
    run_cli(capsys, "compare", base_id, cand_id, "--store", db, "--md", str(md))
    text = md.read_text()
    assert text.startswith("> **PEEKING:") and "--sequential" in text.splitlines()[0]
    assert text.count("PEEKING") == 1
    # the anytime-valid verdict: no notice, its own procedure
    code, out = run_cli(capsys, "compare", base_id, cand_id, "--store", db, "--json",
                        "--sequential")
    payload = json.loads(out)
    assert code == 4 and payload["peeking"] == []
    schema = json.loads((Path(__file__).parents[2] / "docs/schemas/comparison.schema.json")
                        .read_text())
    jsonschema.validate(payload, schema)
    assert payload["notes"][0].startswith("procedure: anytime-valid")
    assert payload["procedure"]["multiplicity"].startswith("e-value bonferroni")
    # every comparison was recorded with its episode counts
    with open_store(db) as st:
        counts = [c["options"].get("episode_counts") for c in st.comparisons()]
        assert {base_id: 600, cand_id: 600} in counts
        st.update_run(cand_id, status="running")
    try:
        code, out = run_cli(capsys, "compare", base_id, cand_id, "--store", db, "--json")
        notes = json.loads(out)["peeking"]
        assert any(f"run {cand_id} is incomplete" in n for n in notes)
    finally:
        with open_store(db) as st:
            st.update_run(cand_id, status="finished")
