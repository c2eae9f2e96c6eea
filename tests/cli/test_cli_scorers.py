"""``evalband label`` and ``evalband agreement`` end to end through the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evalband import run_panel
from evalband.cli import main
from evalband.panel import load_panel
from evalband.store import RunStore


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "s.sqlite"
    with RunStore(path) as st:
        run_panel(load_panel("reach1d"), "reach1d:damped", st, run_id="d")
        rows = [(r.cell, r.episode, r.repeat, r.success) for r in st.episode_records("d")]
    labels = tmp_path / "human.csv"  # every 4th episode judged; one judgement differs
    lines = ["cell,episode,repeat,human"]
    for i, (cell, episode, repeat, ok) in enumerate(rows[::4]):
        lines.append(f"{cell},{episode},{repeat},{int(ok) if i else 1 - int(ok)}")
    labels.write_text("\n".join(lines) + "\n")
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_label_then_agreement(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labels = str(store.with_name("human.csv"))
    code, out, _ = run(capsys, "label", "d", labels, "--scorer", "human", "--source",
                       "operator", "--store", str(store), "--json")
    assert code == 0 and json.loads(out)["episodes"] == 16
    code, out, _ = run(capsys, "agreement", "d", "--store", str(store), "--json")
    assert json.loads(out)["scorers"]["human"] == {"source": "operator", "episodes": 16}
    code, out, _ = run(capsys, "agreement", "d", "--scorers", "human,success", "--store",
                       str(store), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["n"] == 16 and doc["only_second"] == 48
    assert sum(map(sum, doc["table"])) == 16
    assert doc["accuracy"]["estimate"] == pytest.approx(15 / 16)
    assert doc["ppi"]["method"] == "mover" and doc["ppi"]["n_unlabelled"] == 48
    code, out, _ = run(capsys, "agreement", "d", "--scorers", "human,success", "--store",
                       str(store))
    assert "Cohen's kappa" in out and "prediction-powered" in out and "human / success" in out


@pytest.mark.parametrize("args, words", [
    (["agreement", "d", "--scorers", "human"], "two names"),
    (["agreement", "d", "--scorers", "human,nope"], "has scorer 'nope'"),
    (["agreement", "nope", "--scorers", "a,b"], "nope"),
    (["label", "d", "missing.csv", "--scorer", "h", "--source", "s"], "no labels file"),
    (["label", "d", "LABELS", "--scorer", "success", "--source", "s", "--column", "human"],
     "from its record"),
])
def test_bad_input_exits_2_with_one_line(store: Path, capsys: pytest.CaptureFixture[str],
                                         args: list[str], words: str) -> None:
    args = [str(store.with_name("human.csv")) if a == "LABELS" else a for a in args]
    if args[0] == "agreement":
        main(["label", "d", str(store.with_name("human.csv")), "--scorer", "human",
              "--source", "operator", "--store", str(store)])
        capsys.readouterr()
    code, out, err = run(capsys, *args, "--store", str(store))
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err


def test_rescore_then_compare_by_the_human_scorer(store: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    labels = str(store.with_name("human.csv"))
    with RunStore(store) as st:
        run_panel(load_panel("reach1d"), "reach1d:baseline", st, run_id="b")
        original = {r.key: r for r in st.episode_records("d")}
    for run_id in ("d", "b"):
        assert main(["label", run_id, labels, "--scorer", "human", "--source", "operator",
                     "--store", str(store)]) == 0
    capsys.readouterr()
    code, out, _ = run(capsys, "rescore", "d", "--scorer", "human", "--run-id", "d-human",
                       "--store", str(store), "--json")
    done = json.loads(out)
    assert code == 0 and done["episodes"] == 16 and done["left_out"] == 48
    assert done["changed"] == 1  # the one label that disagrees with the env (fixture)
    with RunStore(store) as st:
        rescored = {r.key: r for r in st.episode_records("d-human")}
        extra = st.require_run("d-human").extra
    assert extra["rescored_from"] == "d" and extra["scorer"] == "human"
    flipped = [k for k, r in rescored.items() if r.success != original[k].success]
    assert len(flipped) == 1
    assert main(["rescore", "b", "--scorer", "human", "--run-id", "b-human", "--store",
                 str(store)]) == 0
    capsys.readouterr()
    code, out, _ = run(capsys, "compare", "b-human", "d-human", "--store", str(store), "--json")
    doc = json.loads(out)
    overall = doc["slices"][0]
    assert doc["candidate"] == "d-human" and overall["pairing"] == "paired"
    assert overall["n_baseline"] == overall["n_candidate"] == 16  # the human-judged episodes
    assert overall["successes_candidate"] == sum(r.success for r in rescored.values())
    # compare --scorer: the same decision straight from the original runs (one mechanism)
    code_direct, out, _ = run(capsys, "compare", "b", "d", "--scorer", "human", "--store",
                              str(store), "--json")
    direct = json.loads(out)
    assert code_direct == code
    assert (direct["baseline"], direct["candidate"]) == ("b", "d")
    for key in ("slices", "aggregate", "verdict", "hidden_regressions", "metrics"):
        assert direct[key] == doc[key], key
    assert direct["scorer"] == {"name": "human", "source": "operator", "success_at": 1.0,
                                "judged": {"b": 16, "d": 16}, "left_out": {"b": 48, "d": 48}}
    assert any("judged by scorer 'human' (operator)" in n for n in direct["notes"])
    with RunStore(store) as st:  # the stored comparison records the scorer
        kept = [c for c in st.comparisons() if (c.get("options") or {}).get("scorer")]
    assert len(kept) == 1 and kept[0]["options"]["success_at"] == 1.0
    code, out, _ = run(capsys, "compare", "b", "d", "--scorer", "human", "--store", str(store))
    assert "judged by scorer 'human'" in out
    # show --scorer: the run's summary judged by the scorer, as the rescored run's
    code, out, _ = run(capsys, "show", "d", "--scorer", "human", "--store", str(store), "--json")
    shown = json.loads(out)
    code_r, out_r, _ = run(capsys, "show", "d-human", "--store", str(store), "--json")
    assert code == code_r == 0 and shown["summary"] == json.loads(out_r)["summary"]
    assert shown["summary"]["n_attempted"] == 16 and shown["scorer"]["left_out"] == {"d": 48}
    code, out, _ = run(capsys, "show", "d", "--scorer", "human", "--store", str(store))
    assert code == 0 and "judged by scorer 'human' (operator)" in out
    # rank --scorer: the same ranking as the rescored runs'
    code, out, _ = run(capsys, "rank", "b", "d", "--scorer", "human", "--store", str(store),
                       "--json")
    ranked = json.loads(out)
    code_r, out_r, _ = run(capsys, "rank", "b-human", "d-human", "--store", str(store),
                           "--json")
    assert code == code_r == 0 and ranked["scorer"]["name"] == "human"
    rescored_rank = json.loads(out_r)

    def table(doc: dict) -> list:  # the ranked values, rank sets and tiers of every slice
        return [[(p["value"], p["rank_low"], p["rank_high"], p["tier"]) for p in s["policies"]]
                for s in doc["slices"]]

    assert table(ranked) == table(rescored_rank)
    for bad, said in ((["--scorer", "judge"], "no episode of run b has scorer 'judge'"),
                      (["--success-at", "2"], "--success-at goes with --scorer"),
                      (["--scorer", "human", "--report", str(tmp_path / "r.html")],
                       "evalband rescore")):
        code, _, err = run(capsys, "compare", "b", "d", *bad, "--store", str(store))
        assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err
    code, _, err = run(capsys, "rescore", "d", "--scorer", "success", "--run-id", "x",
                       "--store", str(store))
    assert code == 2 and "already is the 'success' scorer" in err
    code, _, err = run(capsys, "rescore", "d", "--scorer", "human", "--run-id", "d-human",
                       "--store", str(store))
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_a_missing_store_is_not_created(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    labels = tmp_path / "l.csv"
    labels.write_text("episode,human\n0,1\n")
    missing = tmp_path / "none.sqlite"
    for args in (["label", "r", str(labels), "--scorer", "human", "--source", "op"],
                 ["rescore", "r", "--scorer", "human", "--run-id", "x"]):
        code, _, err = run(capsys, *args, "--store", str(missing))
        assert code == 2 and len(err.strip().splitlines()) == 1 and not missing.exists()


@pytest.mark.parametrize("command", [
    ["agreement", "d"], ["agreement", "d", "--scorers", "human,success"],
    ["label", "d", "LABELS", "--scorer", "judge", "--source", "vlm"],
    ["rescore", "d", "--scorer", "human", "--run-id", "x"],
    ["export", "d", "--out", "OUT", "--format", "lerobot"],
])
def test_a_damaged_store_is_refused_in_one_line(store: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str],
                                                command: list[str]) -> None:
    data = bytearray(store.read_bytes())  # as tests/test_hostile_inputs.py damages a store
    rng = np.random.default_rng(7)
    for at in rng.integers(4096, len(data), 300):
        data[int(at)] ^= 0xFF
    store.write_bytes(bytes(data))
    args = [str(store.with_name("human.csv")) if a == "LABELS" else
            str(tmp_path / "out") if a == "OUT" else a for a in command]
    code, _, err = run(capsys, *args, "--store", str(store))
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert "damaged" in err, err


def test_rescore_interrupted_while_storing_leaves_no_run(
        store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the judged episodes are written: no run with missing episodes is left."""
    import evalband.store._sqlite as sqlite_store

    labels = str(store.with_name("human.csv"))
    assert main(["label", "d", labels, "--scorer", "human", "--source", "operator",
                 "--store", str(store)]) == 0
    real = sqlite_store._stream_rows

    def interrupted(records):  # type: ignore[no-untyped-def]
        for i, row in enumerate(real(records)):
            if i == 3:
                raise KeyboardInterrupt
            yield row

    monkeypatch.setattr(sqlite_store, "_stream_rows", interrupted)
    assert main(["rescore", "d", "--scorer", "human", "--run-id", "d-human",
                 "--store", str(store)]) == 130
    monkeypatch.undo()
    with RunStore(store) as st:
        assert st.get_run("d-human") is None
    capsys.readouterr()
    code, _, err = run(capsys, "rescore", "d", "--scorer", "human", "--run-id", "d-human",
                       "--store", str(store))  # and it can be run again
    assert code == 0, err
    with RunStore(store) as st:
        assert st.count_episodes("d-human") == 16


def test_rescore_into_a_taken_run_id_names_the_flag(
        store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labels = str(store.with_name("human.csv"))
    assert main(["label", "d", labels, "--scorer", "human", "--source", "operator",
                 "--store", str(store)]) == 0
    capsys.readouterr()
    code, _, err = run(capsys, "rescore", "d", "--scorer", "human", "--run-id", "d",
                       "--store", str(store))
    assert code == 2 and err.count("\n") == 1 and "already exists" in err, err
    assert "--run-id" in err and "resume" not in err, err
