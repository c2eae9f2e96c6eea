"""A Ray address where nothing listens is one line within seconds (Ray alone retries for
minutes), and nothing is stored."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from evalband.cli import main
from evalband.errors import BackendError
from evalband.run._ray import probe_address


def test_a_dead_address_is_one_line(capsys, tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    code = main(["run", "reach1d", "-p", "reach1d:damped", "--backend", "ray", "--address",
                 "127.0.0.1:1", "--store", str(db)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "nothing accepts connections" in err


def test_a_listening_address_passes_the_probe() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        probe_address(f"127.0.0.1:{port}")
        probe_address(f"ray://127.0.0.1:{port}")
        server.close()
        with socket.socket() as bound:  # the port bound again, not listening: refused, and
            bound.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past a TIME_WAIT
            bound.bind(("127.0.0.1", port))  # no other test's server can take it meanwhile
            with pytest.raises(BackendError, match="127.0.0.1"):
                probe_address(f"ray://127.0.0.1:{port}", timeout_s=1.0)  # closed now


def test_the_ray_extra_has_the_client() -> None:
    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert 'ray = ["ray[client]' in text
    pytest.importorskip("grpc")  # what ray:// needs, installed by the extra
