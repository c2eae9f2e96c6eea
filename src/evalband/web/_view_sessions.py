"""The viewer's hardware-session pages: the session index and one session's page.

A session's policies are runs of the store (one per policy, its trials their episodes), so
each row links to the run's report and its episode table. A session's page renders its
stored ``session analyze`` result (:mod:`evalband.session._stored`) with the report's
session section; the viewer computes no analysis: a session never analyzed says how to
analyze it, and a stored result whose trials changed since says so. A blinded session with
trials still pending shows no per-policy result.
"""

from __future__ import annotations

import html
import urllib.parse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evalband.report import html_page
from evalband.web._view_pages import sortable_table

if TYPE_CHECKING:
    from evalband.store import RunStore

__all__ = ["session_url", "session_rows", "sessions_table", "session_page"]

_E = html.escape


def session_url(session_id: str) -> str:
    """The viewer's path of a session's page.

    >>> session_url("grasp-1")
    '/session/grasp-1'
    """
    return "/session/" + urllib.parse.quote(session_id, safe="")


def _run_url(run_id: str) -> str:
    return "/run/" + urllib.parse.quote(run_id, safe="")


def _row(ss: Any, session_id: str) -> dict[str, Any]:
    from evalband.session._stored import latest_analysis

    plan = ss.plan(session_id)
    counts = ss.counts(session_id)
    run_ids = ss.run_ids(session_id)
    stored = latest_analysis(ss, session_id)
    hidden = plan.blind and counts["pending"] > 0  # blinded, in progress: codes only
    analysis: dict[str, Any] = {"status": "none", "computed_at": None, "options": None}
    if stored is not None:
        analysis = {"status": "current" if stored.current else "outdated",
                    "computed_at": stored.computed_at, "options": stored.options}
    return {
        "session_id": session_id,
        "created_at": plan.created_at,
        "blind": plan.blind,
        "scenes": plan.scenes,
        "attempts": plan.attempts,
        "planned": counts["total"],
        "scored": counts["scored"],
        "skipped": counts["skipped"],
        "pending": counts["pending"],
        "policies": [
            {"policy": plan.codes[p] if hidden else p, "code": plan.codes.get(p, p),
             "run_id": run_ids.get(p),
             "url": None if p not in run_ids else _run_url(run_ids[p]),
             "episodes_url": None if p not in run_ids else _run_url(run_ids[p]) + "/episodes"}
            for p in (sorted(plan.policies, key=plan.codes.__getitem__) if hidden
                      else plan.policies)
        ],
        "analysis": analysis,
        "url": session_url(session_id),
    }


def session_rows(store: RunStore) -> list[dict[str, Any]]:
    """What the session index (and ``/api/sessions``) shows of each session, newest first.

    Keys: ``session_id``, ``created_at``, ``blind``, ``scenes``, ``attempts``, ``planned``,
    ``scored``, ``skipped``, ``pending``, ``policies`` (each with its ``run_id`` and the
    ``url`` of its run and ``episodes_url`` of its episode table; a blinded session with
    trials pending lists its blind codes only, in code order: its runs are named by the
    codes), ``analysis`` (``status``:
    ``current``, ``outdated`` or ``none``; ``computed_at``; ``options``) and ``url``.

    >>> import tempfile
    >>> from evalband.session import SessionStore, plan_session
    >>> from evalband.store import RunStore
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with SessionStore(f"{d}/s.sqlite") as ss:
    ...         ss.create(plan_session(["A", "B"], 2, 1, 0, session_id="g"))
    ...     with RunStore(f"{d}/s.sqlite", read_only=True) as store:
    ...         (row,) = session_rows(store)
    >>> row["planned"], row["policies"][0]["url"], row["analysis"]["status"]
    (4, '/run/g%3AA', 'none')
    """
    from evalband.session import SessionStore

    with SessionStore(store) as ss:
        return [_row(ss, sid) for sid in ss.session_ids()]


def _links(row: dict[str, Any]) -> str:
    out = []
    for p in row["policies"]:
        name = _E(p["policy"])
        if p["url"] is None:
            out.append(name)
        else:
            out.append(f'<a href="{_E(p["url"])}">{name}</a> '
                       f'(<a href="{_E(p["episodes_url"])}">episodes</a>)')
    return ", ".join(out)


_ANALYSIS_WORDS = {
    "current": "analyzed",
    "outdated": "analyzed; trials changed since",
    "none": "not analyzed yet",
}


def sessions_table(rows: Sequence[dict[str, Any]]) -> str:
    """The session index as an HTML table (a note when the store holds no session).

    >>> "No hardware sessions" in sessions_table([])
    True
    """
    if not rows:
        return ('<p class="empty">No hardware sessions in this store (<code>evalband session '
                "plan</code> creates one).</p>")
    body = []
    for r in rows:
        recorded = r["scored"] + r["skipped"]
        body.append(
            "<tr>"
            f'<td><a href="{_E(r["url"])}">{_E(r["session_id"])}</a></td>'
            f"<td>{_links(r)}</td>"
            f"<td>{r['scenes']} x {r['attempts']}{' (blind)' if r['blind'] else ''}</td>"
            f'<td class="num" data-sort="{recorded}">{recorded}/{r["planned"]}</td>'
            f"<td>{_E(_ANALYSIS_WORDS[r['analysis']['status']])}</td>"
            f'<td data-sort="{_E(r["created_at"])}">{_E(r["created_at"][:19])}</td>'
            "</tr>"
        )
    return sortable_table(("session", "policies (runs)", "scenes x attempts", "trials",
                           "analysis", "planned (UTC)"), body, cls="sessions",
                          numeric=("trials",))


def _looks(looks: Sequence[Any]) -> str:
    if not looks:
        return ""
    rows = [
        f'<tr><td class="num">{x.look.scenes_done}</td><td>{"yes" if x.look.decided else "no"}'
        f"</td><td>{_E('; '.join(c['decision'] for c in x.look.comparisons))}</td>"
        f"<td>{_E(x.computed_at[:19])}</td></tr>"
        for x in looks
    ]
    table = sortable_table(("scenes done", "decided", "decisions", "taken (UTC)"), rows,
                           numeric=("scenes done",))
    return ('<section id="looks"><h2>Sequential looks (session run --until-decided)</h2>'
            f"{table}</section>")


def session_page(store: RunStore, session_id: str, nav: str, csp: str) -> str:
    """One session: its runs, then its stored analysis (rendered, never computed), its looks.

    Raises:
        SessionNotFoundError: when the store holds no such session.

    >>> import tempfile
    >>> from evalband.session import SessionStore, plan_session
    >>> from evalband.store import RunStore
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with SessionStore(f"{d}/s.sqlite") as ss:
    ...         ss.create(plan_session(["A", "B"], 2, 1, 0, session_id="g"))
    ...     with RunStore(f"{d}/s.sqlite", read_only=True) as store:
    ...         page = session_page(store, "g", "<nav></nav>", "default-src 'none'")
    >>> "not analyzed yet" in page, 'href="/run/g%3AA"' in page
    (True, True)
    """
    from evalband.report._session import session_section
    from evalband.session import SessionStore, stored_looks
    from evalband.session._stored import latest_analysis

    with SessionStore(store) as ss:
        row = _row(ss, session_id)
        stored = latest_analysis(ss, session_id)
        looks = stored_looks(ss, session_id)
    hidden = row["blind"] and row["pending"] > 0
    parts = [nav]
    if stored is None or hidden:
        why = (
            f"blinded, with {row['pending']} trial(s) pending: no per-policy result is shown "
            "until the session ends" if hidden
            else "not analyzed yet: run evalband session analyze "
            f"{session_id} to store its analysis"
        )
        parts.append(f"<header><h1>Session {_E(session_id)}</h1>"
                     f'<p class="subtitle">{_E(why)}</p></header>')
    else:
        when = f"stored analysis computed {stored.computed_at[:19]} UTC"
        if not stored.current:
            when += ("; the session's trials changed since (run evalband session analyze "
                     f"{session_id} to refresh it)")
        parts.append(f'<p class="evalband-note">{_E(when)}</p>')
        parts.append(session_section(stored.analysis))
    parts.append(f'<section id="runs"><h2>Runs</h2>{sessions_table([row])}</section>')
    if not hidden:
        parts.append(_looks(looks))
    return html_page(f"evalband session {session_id}", "\n".join(parts), csp=csp)
