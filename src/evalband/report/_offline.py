"""An offline action-error report as text and Markdown: pure renderers."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalband.analysis._offline_results import OfflineReport

__all__ = ["offline_lines", "offline_markdown"]


def _band(i: object) -> str:
    est, low, high = (float(getattr(i, k)) for k in ("estimate", "low", "high"))
    return f"{est:.4g} [{low:.4g}, {high:.4g}]"


def offline_lines(r: OfflineReport) -> list[str]:
    """The report for a terminal: the split's make-up, then one line per checkpoint.

    >>> from evalband.analysis._offline_results import OfflineReport
    >>> offline_lines(OfflineReport("d", (1, 2), 40, 0, None, (), ()))[0]
    'validation action error on 2 held-out episodes (40 frames) of d, noise seed 0'
    """
    out = [f"validation action error on {len(r.episodes)} held-out episodes ({r.frames} frames) "
           f"of {r.dataset}, noise seed {r.seed}"]
    if r.composition is not None:
        out.append(f"  split: {r.composition.sentence}")
    for c in r.checkpoints:
        steps = f", {c.denoising_steps} denoising steps" if c.denoising_steps else ""
        out.append(f"  {c.checkpoint} ({c.policy_type}{steps}): MSE {_band(c.action_mse)}, "
                   f"MAE {_band(c.action_mae)}")
    out.extend(f"note: {n}" for n in r.notes)
    return out


def offline_markdown(r: OfflineReport) -> str:
    """The report as Markdown."""
    out = [f"## Validation action error ({len(r.episodes)} held-out episodes, {r.frames} "
           "frames)", ""]
    if r.composition is not None:
        out += [f"Split: {r.composition.sentence}.", ""]
    out += ["| checkpoint | type | denoising steps | MSE | MAE |", "|---|---|---|---|---|"]
    out += [f"| {c.checkpoint} | {c.policy_type} | {c.denoising_steps or '-'} | "
            f"{_band(c.action_mse)} | {_band(c.action_mae)} |" for c in r.checkpoints]
    out += [f"- {n}" for n in r.notes]
    return "\n".join(out) + "\n"
