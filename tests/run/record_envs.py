"""Film one short episode of each env given, in whatever venv runs this (``--record``).

``python record_envs.py STORE PANEL.yaml [PANEL.yaml ...]``: plays each panel with the built-in
``random`` policy (one episode, ``run --record all --record-size 64x48``, through the CLI's
own ``main``) and prints, per panel, JSON ``[env, steps, clip frames, width, height]`` read
back by decoding the stored clip with PyAV. Run by tests/run/test_record_envs.py in the main
venv and in .venv-mujoco3 (MUJOCO_GL=egl: no display).
"""

from __future__ import annotations

import json
import sys

import av

from evalband.cli import main
from evalband.store import open_store
from evalband.store._media import media_file


def film(store: str, panels: list[str]) -> list[list[object]]:
    out: list[list[object]] = []
    for i, panel in enumerate(panels):
        code = main(["run", panel, "-p", "random", "--record", "all", "--record-size", "64x48",
                     "--run-id", f"r{i}", "--store", store, "--json"])
        assert code == 0, f"{panel}: exit {code}"
        with open_store(store) as st:
            (record,) = st.episode_records(f"r{i}")
            env = st.require_run(f"r{i}").panel_name
        (ref,) = record.media
        with av.open(str(media_file(store, ref))) as container:
            frames = list(container.decode(video=0))
        out.append([env, record.steps, len(frames), frames[0].width, frames[0].height])
    return out


if __name__ == "__main__":
    print(json.dumps(film(sys.argv[1], sys.argv[2:])))
