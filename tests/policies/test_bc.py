"""Tests of behavior cloning (evalband.policies.bc) and the torch policy adapter.

Oracles: bit-reproducibility is checked against a second, independent training run (in this
process and in a fresh interpreter), with ``torch.equal`` on every tensor; the fit is checked
against the ordinary least-squares solution of the same linear-plus-noise data
(``numpy.linalg.lstsq``), which is the best any regressor can do on a linear map, and against
the variance of the targets (the error of predicting the mean); normalisation against the
seed's formula written out in numpy; the manifest's hash against ``hashlib.sha256`` of the
file bytes.
"""

from __future__ import annotations

import hashlib
import pickle
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from evalband.episode import Outcome  # noqa: E402
from evalband.errors import (  # noqa: E402
    InvalidInputError,
    InvalidParameterError,
    PolicyNotFoundError,
    StoreError,
)
from evalband.policies import resolve_policy  # noqa: E402
from evalband.policies._torch import TorchPolicy, torch_policy  # noqa: E402
from evalband.policies.bc import (  # noqa: E402
    BCPolicy,
    CheckpointError,
    checkpoint_hash,
    load_checkpoint,
    load_policy,
    norm_stats,
    save_checkpoint,
    train_bc,
)
from evalband.run import run_panel  # noqa: E402
from testkit import coin_panel, comparable  # noqa: E402

SMALL = {"hidden_dim": 32, "epochs": 15, "batch_size": 64}


def linear_data(n: int = 400, seed: int = 0, noise: float = 0.05):
    rng = np.random.default_rng(seed)
    obs = rng.uniform(-1.0, 1.0, size=(n, 3)).astype(np.float32)
    weights = np.array([[1.0, -0.5], [0.3, 2.0], [-1.2, 0.7]])
    actions = obs @ weights + np.array([0.2, -0.1]) + noise * rng.standard_normal((n, 2))
    return obs, actions.astype(np.float32)


@pytest.fixture(scope="module")
def data():
    return linear_data()


@pytest.fixture(scope="module")
def trained(data):
    return train_bc(*data, seed=7, **SMALL)


def state_equal(a: BCPolicy, b: BCPolicy) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


# -- reproducibility -----------------------------------------------------------------------


def test_same_seed_gives_bit_identical_weights_and_checkpoints(data, trained, tmp_path) -> None:
    again = train_bc(*data, seed=7, **SMALL)
    assert state_equal(trained, again)
    # Different file names and directories: the bytes must not depend on them.
    (tmp_path / "sub").mkdir()
    h1 = save_checkpoint(trained, tmp_path / "first.pt")
    h2 = save_checkpoint(again, tmp_path / "sub" / "other_name.pt")
    assert h1 == h2
    assert (tmp_path / "first.pt").read_bytes() == (tmp_path / "sub" / "other_name.pt").read_bytes()
    assert h1 == hashlib.sha256((tmp_path / "first.pt").read_bytes()).hexdigest()
    assert checkpoint_hash(tmp_path / "first.pt") == h1


def test_training_is_reproducible_in_a_fresh_process(data, trained, tmp_path) -> None:
    # A fresh interpreter with a different thread count and a consumed global RNG.
    np.save(tmp_path / "obs.npy", data[0])
    np.save(tmp_path / "act.npy", data[1])
    script = textwrap.dedent(
        f"""
        import numpy as np, torch
        torch.set_num_threads(2); torch.rand(5)
        from evalband.policies.bc import train_bc, save_checkpoint
        obs, act = np.load({str(tmp_path / "obs.npy")!r}), np.load({str(tmp_path / "act.npy")!r})
        policy = train_bc(obs, act, seed=7, **{SMALL!r})
        print(save_checkpoint(policy, {str(tmp_path / "child.pt")!r}))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == save_checkpoint(trained, tmp_path / "parent.pt")
    assert state_equal(load_checkpoint(tmp_path / "child.pt"), trained)


def test_different_seeds_give_different_weights(data, trained) -> None:
    other = train_bc(*data, seed=8, **SMALL)
    sa, sb = trained.state_dict(), other.state_dict()
    assert not torch.equal(sa["net.0.weight"], sb["net.0.weight"])
    assert not torch.equal(sa["net.4.weight"], sb["net.4.weight"])
    for name in ("obs_min", "obs_range", "act_min", "act_range"):  # data, not seed
        assert torch.equal(sa[name], sb[name])


def test_training_restores_global_torch_state(data) -> None:
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    rng_state = torch.get_rng_state()
    train_bc(*data, seed=1, hidden_dim=8, epochs=2, num_threads=1)
    assert torch.get_num_threads() == threads
    assert torch.are_deterministic_algorithms_enabled() == deterministic
    assert torch.equal(torch.get_rng_state(), rng_state)


# -- learning ------------------------------------------------------------------------------


def test_mlp_fits_a_linear_map_nearly_as_well_as_least_squares(data) -> None:
    obs, actions = data
    policy = train_bc(obs, actions, hidden_dim=64, epochs=60, batch_size=32, seed=0)
    with torch.no_grad():
        pred = policy(torch.from_numpy(obs)).numpy()
    mse_bc = float(np.mean((pred - actions) ** 2))
    design = np.hstack([obs, np.ones((len(obs), 1), np.float32)]).astype(np.float64)
    coef, *_ = np.linalg.lstsq(design, actions.astype(np.float64), rcond=None)
    mse_ols = float(np.mean((design @ coef - actions) ** 2))  # ~ noise variance 0.0025
    mse_mean = float(np.mean((actions - actions.mean(0)) ** 2))  # predicting the mean
    assert mse_bc < 0.01 * mse_mean
    assert mse_bc < 2.0 * mse_ols
    # And on fresh points of the same map, not just the training rows.
    fresh_obs, fresh_act = linear_data(n=200, seed=99, noise=0.0)
    with torch.no_grad():
        fresh_pred = policy(torch.from_numpy(fresh_obs)).numpy()
    assert float(np.mean((fresh_pred - fresh_act) ** 2)) < 0.01 * mse_mean


def test_norm_stats_match_the_seed_formula(data) -> None:
    obs, actions = data
    stats = norm_stats(obs, actions)
    np.testing.assert_array_equal(stats["obs_min"], obs.min(0))
    np.testing.assert_array_equal(stats["obs_range"], obs.max(0) - obs.min(0))
    np.testing.assert_array_equal(stats["act_min"], actions.min(0))
    policy = BCPolicy(3, 2, 8, stats)
    x = torch.from_numpy(obs[:5])
    normalized = np.clip(2.0 * (obs[:5] - obs.min(0)) / (obs.max(0) - obs.min(0)) - 1.0, -1, 1)
    with torch.no_grad():
        net_out = policy.net(torch.from_numpy(normalized.astype(np.float32))).numpy()
        out = policy(x).numpy()
    expected = (net_out + 1.0) / 2.0 * (actions.max(0) - actions.min(0)) + actions.min(0)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_constant_dimensions_do_not_produce_nan() -> None:
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, size=(128, 1))
    obs = np.hstack([x, np.full((128, 1), 3.0)]).astype(np.float32)  # dim 1 is constant
    actions = np.hstack([0.5 * x, np.full((128, 1), -2.0)]).astype(np.float32)
    stats = norm_stats(obs, actions)
    assert stats["obs_range"][1] == 1.0 and stats["act_range"][1] == 1.0
    policy = train_bc(obs, actions, hidden_dim=16, epochs=40, lr=1e-2, batch_size=32, seed=0)
    assert all(torch.isfinite(t).all() for t in policy.state_dict().values())
    probe = np.array([[0.3, 3.0], [0.3, 100.0], [-5.0, 3.0]], np.float32)  # incl. off-data
    with torch.no_grad():
        out = policy(torch.from_numpy(probe)).numpy()
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out[0], [0.15, -2.0], atol=0.05)
    # A module built from zero ranges directly is guarded too.
    zero = {"obs_min": [0.0], "obs_range": [0.0], "act_min": [1.0], "act_range": [0.0]}
    guarded = BCPolicy(1, 1, 4, zero)
    assert guarded.obs_range.item() == 1.0 and guarded.act_range.item() == 1.0
    assert torch.isfinite(guarded(torch.zeros(2, 1))).all()


# -- checkpoints ---------------------------------------------------------------------------


def test_save_load_round_trip_gives_identical_outputs(data, trained, tmp_path) -> None:
    digest = save_checkpoint(trained, tmp_path / "p.pt", meta={"num_demos": 12})
    loaded = load_checkpoint(tmp_path / "p.pt")
    assert isinstance(loaded, BCPolicy) and not loaded.training
    assert (loaded.obs_dim, loaded.act_dim, loaded.hidden_dim) == (3, 2, 32)
    assert state_equal(loaded, trained)
    x = torch.from_numpy(data[0])
    with torch.no_grad():
        assert torch.equal(loaded(x), trained(x))
    assert loaded.meta["num_demos"] == 12 and loaded.meta["seed"] == 7
    assert loaded.meta["num_samples"] == len(data[0])
    # Re-saving what was loaded reproduces the same bytes.
    assert save_checkpoint(loaded, tmp_path / "again.pt") == digest
    assert load_policy(tmp_path / "p.pt").checkpoint_hash == digest


def test_checkpoint_errors_are_named(trained, tmp_path) -> None:
    with pytest.raises(CheckpointError, match="cannot read"):
        load_checkpoint(tmp_path / "missing.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="not a readable torch checkpoint"):
        load_checkpoint(tmp_path / "junk.pt")
    torch.save({"weights": torch.zeros(2)}, tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError, match="not an evalband BC checkpoint"):
        load_checkpoint(tmp_path / "foreign.pt")
    with pytest.raises(InvalidInputError, match="JSON"):
        save_checkpoint(trained, tmp_path / "bad_meta.pt", meta={"x": object()})
    with pytest.raises(InvalidInputError, match="BCPolicy"):
        save_checkpoint(torch.nn.Linear(1, 1), tmp_path / "lin.pt")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("obs", "actions", "match"),
    [
        (np.zeros(5), np.zeros((5, 1)), "2-D"),
        (np.zeros((0, 2)), np.zeros((0, 1)), ">= 1 row"),
        (np.zeros((5, 2)), np.zeros((4, 1)), "same number of rows"),
        (np.array([[0.0], [np.nan]]), np.zeros((2, 1)), "finite"),
        (np.array([[0.0], [1e39]]), np.zeros((2, 1)), "finite"),
        ([["a"], ["b"]], np.zeros((2, 1)), "numeric"),
    ],
)
def test_bad_training_data_is_rejected(obs, actions, match) -> None:
    with pytest.raises(InvalidInputError, match=match):
        train_bc(obs, actions, hidden_dim=4, epochs=1)


@pytest.mark.parametrize(
    "kwargs",
    [{"epochs": 0}, {"hidden_dim": 1.5}, {"batch_size": -1}, {"lr": 0.0}, {"lr": float("nan")},
     {"seed": -1}, {"seed": 1.0}, {"num_threads": 0}],
)
def test_bad_training_parameters_are_rejected(data, kwargs) -> None:
    with pytest.raises(InvalidParameterError):
        train_bc(*data, **{"hidden_dim": 4, "epochs": 1, **kwargs})


# -- the adapter and the resolver ----------------------------------------------------------


def test_torch_policy_single_and_batch_agree(data, trained) -> None:
    policy = torch_policy(trained)
    assert policy.batched and policy.checkpoint_hash is None
    batch = data[0][:16].astype(np.float64)
    out = policy(batch)
    assert out.shape == (16, 2) and out.dtype == np.float64
    singles = np.stack([policy(row) for row in batch])
    assert singles.shape == (16, 2) and singles.dtype == np.float64
    np.testing.assert_allclose(singles, out, rtol=1e-6, atol=1e-7)
    with torch.no_grad():  # float64 in, module's float32 math, float64 out
        direct = trained(torch.from_numpy(data[0][:16])).double().numpy()
    np.testing.assert_array_equal(out, direct)
    frozen = batch[0].copy()
    frozen.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert policy(frozen).shape == (2,)
    with pytest.raises(InvalidInputError, match="shape"):
        policy(np.zeros((2, 2, 3)))
    assert torch_policy(policy) is policy
    with pytest.raises(InvalidInputError, match="torch.nn.Module"):
        torch_policy(lambda obs: obs)


def test_torch_policy_pickles(tmp_path, trained) -> None:
    save_checkpoint(trained, tmp_path / "p.pt")
    policy = load_policy(tmp_path / "p.pt")
    clone = pickle.loads(pickle.dumps(policy))
    assert isinstance(clone, TorchPolicy) and clone.checkpoint_hash == policy.checkpoint_hash
    obs = np.array([0.1, -0.2, 0.3])
    np.testing.assert_array_equal(clone(obs), policy(obs))


def test_resolve_policy_loads_checkpoint_paths(tmp_path, trained, monkeypatch) -> None:
    digest = save_checkpoint(trained, tmp_path / "model.pt")
    policy = resolve_policy(str(tmp_path / "model.pt"))
    assert isinstance(policy, TorchPolicy) and policy.checkpoint_hash == digest
    monkeypatch.chdir(tmp_path)
    relative = resolve_policy("model.pt")
    assert isinstance(relative, TorchPolicy) and relative.checkpoint_hash == digest
    with pytest.raises(PolicyNotFoundError, match="does not exist"):
        resolve_policy("missing/model.pt")
    (tmp_path / "junk.pt").write_bytes(b"junk")
    with pytest.raises(CheckpointError):
        resolve_policy("junk.pt")


def test_resolve_policy_wraps_torch_module_attributes(tmp_path, monkeypatch) -> None:
    (tmp_path / "my_torch_policies.py").write_text(
        "import torch\nNET = torch.nn.Linear(2, 1)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    policy = resolve_policy("my_torch_policies:NET")
    assert isinstance(policy, TorchPolicy)
    out = policy(np.array([1.0, 2.0]))
    assert out.shape == (1,) and out.dtype == np.float64


# -- the runner ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def coin_bc(tmp_path_factory):
    """A tiny BC policy for the coin env (obs: the step count, shape (1,); action shape (1,))."""
    steps = np.repeat(np.arange(6.0), 4).reshape(-1, 1).astype(np.float32)
    path = tmp_path_factory.mktemp("ckpt") / "coin_bc.pt"
    digest = save_checkpoint(train_bc(steps, -0.1 * steps, hidden_dim=8, epochs=5, seed=0),
                             path, meta={"num_demos": 6})
    return path, digest


def test_manifest_records_the_checkpoint_hash(store, coin_bc) -> None:
    path, digest = coin_bc
    panel = coin_panel(episodes=6)
    run_id, summary = run_panel(panel, str(path), store, run_id="bc")
    manifest = store.get_run(run_id)
    assert manifest.policy == str(path)
    assert manifest.policy_hash == digest == hashlib.sha256(path.read_bytes()).hexdigest()
    records = store.episode_records(run_id)
    assert len(records) == len(panel.episode_specs()) == summary.n_attempted
    assert not [r for r in records if r.outcome is Outcome.ERROR]


@pytest.mark.slow
def test_worker_processes_load_the_checkpoint_themselves(store, coin_bc) -> None:
    # Worker processes get the path string (not the object) and resolve it; ~4 s of torch
    # import in the worker.
    path, digest = coin_bc
    panel = coin_panel(episodes=6)
    run_panel(panel, str(path), store, run_id="serial")
    run_panel(panel, str(path), store, run_id="proc", backend="process", workers=1)
    assert store.get_run("proc").policy_hash == digest
    serial, proc = store.episode_records("serial"), store.episode_records("proc")
    assert not [r for r in proc if r.outcome is Outcome.ERROR]
    assert [comparable(r) for r in proc] == [comparable(r) for r in serial]


def test_resume_with_changed_weights_is_refused(store, tmp_path, coin_bc) -> None:
    path = tmp_path / "changing.pt"
    path.write_bytes(coin_bc[0].read_bytes())
    panel = coin_panel(episodes=2)
    run_panel(panel, str(path), store, run_id="r")
    run_panel(panel, str(path), store, run_id="r")  # same weights: resumes fine
    steps = np.arange(6.0, dtype=np.float32).reshape(-1, 1)
    save_checkpoint(train_bc(steps, steps, hidden_dim=8, epochs=2, seed=1), path)
    with pytest.raises(StoreError, match="weights changed"):
        run_panel(panel, str(path), store, run_id="r")


# -- torch stays optional ------------------------------------------------------------------


def test_importing_evalband_does_not_import_torch() -> None:
    script = (
        "import sys, evalband, evalband.policies, evalband.run\n"
        "from evalband.policies import resolve_policy\n"
        "resolve_policy('reach1d:damped')\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "False"
