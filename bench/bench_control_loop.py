"""Benchmark: the robot session's control loop holds 30 Hz on sim-arm with a torch policy.

The loop (``evalband.session._control.ControlLoop``) runs in real time on the machine's clock
(``RealClock``): every step it reads sim-arm's observation (physics stepped to the present,
the wrist camera's 96 x 128 frame), runs the policy, sends the goals, streams the frame into
the trial's clip (H.264 on a background thread, as a session does) and logs the step. The
policy is a small convolutional network in torch (one intra-op thread; 3 conv layers on the
wrist image, an MLP with the motors, ~82 k parameters), untrained: only its cost matters.

Reported, for the policy phase of a trial of ``seconds`` (20 s; quick: 6 s):

* ``achieved_hz`` (steps / elapsed on the clock) against the 30 Hz target, and the share of
  deadlines missed (a step that ended after the next period began);
* the policy's latency (p50/p95 ms) and the loop's own overhead per step (the step's time
  minus the policy's: observation, physics, rendering, sending, clip, log) p50/p95;
* the same trial with the policy made slower than the period (a 40 ms sleep added): its
  achieved rate and misses, and whether ``timing_warning`` fires (it must).

``passed``: the loop holds the rate (achieved >= 29.5 Hz, <= 2% of deadlines missed), and the
warning fires for the slow policy but not for the fast one. The machine's load (``uptime``)
is stated with the figures; on this shared 2-core machine other work takes cores.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import numpy as np

TARGET_HZ = 30.0


def _policy(slow_s: float = 0.0) -> Any:
    import time

    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = torch.nn.ModuleDict({
        "conv": torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 5, stride=2), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 32, 3, stride=2), torch.nn.ReLU(),
            torch.nn.Conv2d(32, 32, 3, stride=2), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten()),
        "head": torch.nn.Sequential(torch.nn.Linear(32 * 16 + 5, 128), torch.nn.ReLU(),
                                    torch.nn.Linear(128, 5)),
    }).eval()
    keys = ("shoulder_pan.pos", "reach.pos", "lift.pos", "wrist_roll.pos", "gripper.pos")
    home = np.array([0.0, 230.0, 120.0, 0.0, 80.0])

    def act(obs: dict[str, Any]) -> dict[str, float]:
        image = torch.from_numpy(np.ascontiguousarray(obs["wrist"])).permute(2, 0, 1)
        state = torch.tensor([[float(obs[k]) for k in keys]], dtype=torch.float32)
        with torch.inference_mode():
            features = net["conv"](image[None].float() / 255.0)
            out = net["head"](torch.cat([features, state / 100.0], dim=1))[0].numpy()
        if slow_s:
            time.sleep(slow_s)
        goal = home + 15.0 * np.tanh(out)  # wander near home: the arm keeps moving
        return {k: float(v) for k, v in zip(keys, goal, strict=True)}

    params = sum(p.numel() for p in net.parameters())
    return act, params


def _trial(seconds: float, slow_s: float) -> dict[str, Any]:
    from evalband.run._encode import ClipStream
    from evalband.session import resolve_robot
    from evalband.session._clock import RealClock
    from evalband.session._control import ControlLoop, timing_summary, timing_warning

    clock = RealClock()
    robot = resolve_robot("sim-arm", clock=clock.now)
    robot.connect()
    act, params = _policy(slow_s)
    act(robot.get_observation())  # warm-up call, as a session makes
    clip = ClipStream(fps=TARGET_HZ, codec="h264")
    loop = ControlLoop(robot, clock, TARGET_HZ, clip=clip)
    loop.run_policy(act, lerobot_style=False, time_limit_s=seconds)
    data, frames, _ = clip.finish()
    robot.disconnect()
    summary = timing_summary(loop.log, TARGET_HZ)
    policy = np.asarray(loop.log.policy_ms)
    overhead = np.asarray(loop.log.loop_ms) - policy
    return {
        "seconds": seconds,
        "steps": summary["steps"],
        "achieved_hz": summary["achieved_hz"],
        "missed": summary["missed"],
        "missed_share": round(summary["missed"] / summary["steps"], 4),
        "policy_ms_p50": round(float(np.percentile(policy, 50)), 3),
        "policy_ms_p95": round(float(np.percentile(policy, 95)), 3),
        "overhead_ms_p50": round(float(np.percentile(overhead, 50)), 3),
        "overhead_ms_p95": round(float(np.percentile(overhead, 95)), 3),
        "late_ms_p95": round(float(np.percentile(loop.log.late_ms, 95)), 3),
        "clip_frames": frames,
        "clip_bytes": len(data),
        "parameters": params,
        "warning": timing_warning(summary, "bench"),
    }


def run(quick: bool = False) -> dict[str, Any]:
    """Time the real-time loop with a fast and a slow torch policy on sim-arm."""
    seconds = 6.0 if quick else 20.0
    load_before = os.getloadavg()
    fast = _trial(seconds, 0.0)
    slow = _trial(3.0 if quick else 6.0, 0.040)
    load_after = os.getloadavg()
    holds = fast["achieved_hz"] >= TARGET_HZ - 0.5 and fast["missed_share"] <= 0.02
    warns = slow["warning"] is not None and fast["warning"] is None
    return {
        "name": "control_loop_30hz",
        "target_hz": TARGET_HZ,
        "fast": fast,
        "slow_policy_40ms": slow,
        "achieved_hz": fast["achieved_hz"],
        "ratio": round(fast["achieved_hz"] / TARGET_HZ, 4),  # achieved / target rate
        "target_ratio": round((TARGET_HZ - 0.5) / TARGET_HZ, 4),
        "missed_share": fast["missed_share"],
        "overhead_ms_p50": fast["overhead_ms_p50"],
        "warning_fires_for_slow_policy": slow["warning"] is not None,
        "load_average": [round(v, 2) for v in (*load_before, *load_after)],
        "passed": bool(holds and warns),
    }


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
