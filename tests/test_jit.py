"""evalband._util.jit: the one switch between numpy and numba-compiled kernels."""

from __future__ import annotations

import numpy as np
import pytest

import evalband._util.jit as jit
from evalband.errors import InvalidParameterError


def test_choices_and_threshold(monkeypatch):
    monkeypatch.setattr(jit, "numba_loaded", lambda: True)
    assert jit.use_compiled("numpy", 10**7) is False
    assert jit.use_compiled("auto", jit.MIN_COMPILED_BATCH - 1) is False
    assert jit.use_compiled("auto", jit.MIN_COMPILED_BATCH) is True
    assert jit.use_compiled("compiled", 1) is True  # numba is part of the dev install


def test_auto_never_pays_numba_import_itself(monkeypatch):
    monkeypatch.setattr(jit, "numba_loaded", lambda: False)
    assert jit.use_compiled("auto", 10**9) is False
    assert jit.use_compiled("compiled", 10) is True  # an explicit request still compiles


def test_auto_does_not_import_numba_in_a_fresh_process():
    import subprocess
    import sys

    code = ("import sys; from evalband.envs import rollout_batch; "
            "from evalband.envs._reach1d_core import episode_condition_seeds; "
            "from evalband.policies.reach1d import damped; "
            "rollout_batch(damped, episode_condition_seeds(7, 5000)); "
            "print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"
    with pytest.raises(InvalidParameterError, match="kernel must be one of"):
        jit.use_compiled("cuda", 5)


def test_without_numba(monkeypatch):
    monkeypatch.setattr(jit, "compiled_available", lambda: False)
    assert jit.use_compiled("auto", 10**7) is False
    with pytest.raises(InvalidParameterError, match=r"needs numba: pip install 'evalband\[fast\]'"):
        jit.use_compiled("compiled", 5)


def scaled_sum(x, scale):
    total = 0.0
    for i in range(x.shape[0]):
        total += scale * x[i]
    return total


def test_compiled_is_cached_and_agrees_with_the_python_source():
    kernel = jit.compiled(scaled_sum)
    assert jit.compiled(scaled_sum) is kernel
    x = np.random.default_rng(0).normal(size=1000)
    assert kernel(x, 0.1) == scaled_sum(x, 0.1)  # same operations in the same order
