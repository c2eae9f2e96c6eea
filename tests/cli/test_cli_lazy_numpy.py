"""numpy's submodules that ``import scipy`` would execute wait until touched, then work."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

#: What each deferred submodule gives when touched (run with and without the deferral).
USE = (
    "import numpy, numpy.testing, json\n"
    "from numpy.polynomial import Polynomial\n"
    "numpy.testing.assert_array_equal(numpy.arange(3), [0, 1, 2])\n"
    "out = [numpy.random.default_rng(7).random(3).tolist(), Polynomial([1, 2, 3])(2.0),\n"
    "       float(numpy.ma.masked_array([1.0, 2.0, 4.0], [0, 1, 0]).sum()),\n"
    "       callable(numpy.f2py.run_main), numpy.char.upper('ab').item(),\n"
    "       numpy.strings.lower('AB').item(), numpy.rec.fromrecords([(1, 'a')]).shape[0],\n"
    "       numpy.ctypeslib.as_array((__import__('ctypes').c_int * 2)(5, 6)).tolist(),\n"
    "       float(scipy.special.bdtr(3, 10, 0.5))]\n"
    "print(json.dumps(out))\n"
)


def _child(code: str) -> list[Any]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_scipy_import_leaves_numpy_submodules_unexecuted_until_touched() -> None:
    deferred = _child(
        "import sys, json\n"
        "from evalband.cli._lazy_numpy import DEFERRED, install\n"
        "install()\n"
        "import scipy.special\n"
        "from evalband.cli._lazy_numpy import _BeforeScipy\n"
        "lazy = [n for n in DEFERRED if type(sys.modules.get('numpy.' + n)).__name__ =="
        " '_Deferred']\n"
        "inner = sorted(m for m in sys.modules if m.startswith(('numpy.f2py.',"
        " 'numpy.testing.', 'numpy.polynomial.', 'numpy.ma.', 'numpy.random.')))\n"
        "print(json.dumps([lazy, inner, _BeforeScipy in sys.meta_path]))\n"
    )
    lazy, inner, still_installed = deferred
    assert set(lazy) >= {"f2py", "testing", "polynomial", "ma"}, lazy
    assert inner == [] and still_installed is False


def test_deferred_submodules_give_what_numpy_gives() -> None:
    plain = _child("import scipy.special\n" + USE)
    deferred = _child("from evalband.cli._lazy_numpy import install\ninstall()\n"
                      "import scipy.special\n" + USE)
    assert deferred == plain
    assert abs(float(plain[-1]) - 176 / 1024) < 1e-15  # P(X <= 3), X ~ Bin(10, 1/2)


def test_threads_touching_a_deferred_submodule_at_once_all_get_it_whole() -> None:
    got = _child(
        "import json, threading\n"
        "from evalband.cli._lazy_numpy import install\n"
        "install()\n"
        "import scipy.special, numpy\n"
        "barrier, out = threading.Barrier(8), []\n"
        "def touch(i):\n"
        "    barrier.wait()\n"
        "    try:\n"
        "        out.append(float(numpy.random.default_rng(i).random()))\n"
        "    except Exception as exc:\n"
        "        out.append(repr(exc))\n"
        "threads = [threading.Thread(target=touch, args=(i,)) for i in range(8)]\n"
        "[t.start() for t in threads]\n"
        "[t.join() for t in threads]\n"
        "print(json.dumps(sorted(out, key=str)))\n"
    )
    plain = sorted(_child("import json, numpy\nprint(json.dumps([float(numpy.random."
                          "default_rng(i).random()) for i in range(8)]))\n"), key=str)
    assert got == plain


def test_main_leaves_no_finder_behind() -> None:
    from evalband.cli import main
    from evalband.cli._lazy_numpy import _BeforeScipy

    assert main(["ci", "8", "20"]) == 0
    assert _BeforeScipy not in sys.meta_path
