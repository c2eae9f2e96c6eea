"""Pre-registration: the comparisons and groupings planned before the data, locked with a hash.

Seed 004, section 5: every safeguard was in place and three wrong stories formed anyway,
"because grouping-choice happens between the safeguards"; the protocol for next time is to
"pre-register groupings; anything discovered post-hoc buys a hypothesis, not a finding".
``evalband prereg lock PLAN.yaml`` stores the plan's exact text, its sha256 and the lock time
in the run store (table ``preregistrations``); ``evalband session analyze`` then labels the
comparisons the plan names *confirmatory* (when it was locked before the session's first
scored trial) and every other comparison *exploratory — a hypothesis, not a finding*.

The YAML file::

    name: pretrained-vs-scratch      # optional; the file's stem by default
    session: grasp-2                 # optional: the session this plan is for
    primary_metric: success          # optional; success at the rubric's threshold
    comparisons:                     # pairs of policies: [A, B] or "A vs B"
      - [PT_slowLR, GN_s1000]
      - PT_fullLR vs GN_s1000
    groupings:                       # optional: name -> exactly two groups of policies
      pretraining:
        pretrained: [PT_slowLR, PT_fullLR]
        scratch: [GN_s1000, GN_s2000, BN_scratch]
    positive_control_floor: 0.3      # optional: the rate the positive control must reach
    notes: why these comparisons     # optional free text
    design:                          # optional: the stop rule of session run --until-decided
      effect: 0.2                    #   the drop its test is tuned to (default 0.10)
      alpha: 0.05                    #   family-wise error over the comparisons (default 0.05)
      discordant: 0.3                #   assumed share of pairs that disagree (optional)

The ``design`` block fixes the sequential design before the data, with the plan's lock: the
stop rule of ``session run --until-decided`` and ``session analyze``'s "stopped early" both
use it, and an ``--alpha`` that differs from it is refused.

A name is locked once: locking the same text again is a no-op that returns the first lock;
different text under a locked name is refused (lock it under a new name).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalband._util.ids import check_name
from evalband.errors import InvalidInputError, PreregistrationError
from evalband.session._files import PRIMARY_METRICS
from evalband.store import RunStore
from evalband.store._sqlite import DEFAULT_STORE_PATH

__all__ = [
    "Grouping",
    "Preregistration",
    "PreregistrationError",
    "parse_prereg",
    "lock_prereg",
    "list_preregs",
    "get_prereg",
    "prereg_for_session",
    "PRIMARY_METRICS",
]

# The preregistrations table is created with the store (evalband.store._schema).
_SELECT = 'SELECT "name", "sha256", "locked_at", "source", "yaml" FROM preregistrations'


@dataclass(frozen=True)
class Grouping:
    """A planned comparison of two groups of policies, pooled within each group.

    Attributes:
        name: the grouping's name (e.g. ``"pretraining"``).
        labels: the two groups' labels, in the order given.
        members: the policies of each group.

    >>> Grouping("norm", ("BN", "GN"), (("a", "b"), ("c",))).title
    'BN vs GN'
    """

    name: str
    labels: tuple[str, str]
    members: tuple[tuple[str, ...], tuple[str, ...]]

    @property
    def title(self) -> str:
        """``"first vs second"``."""
        return f"{self.labels[0]} vs {self.labels[1]}"


@dataclass(frozen=True)
class Preregistration:
    """A parsed pre-registration, locked (``locked_at`` set) or not yet.

    Attributes:
        name: the name it is locked under.
        sha256: hex sha256 of ``text`` (UTF-8).
        text: the YAML exactly as locked.
        session_id: the session it plans, when it names one.
        primary_metric: ``"success"``.
        comparisons: planned policy pairs ``(A, B)``; A - B is the reported difference.
        groupings: planned group comparisons.
        positive_control_floor: the success rate the positive control must reach, if stated.
        notes: free text.
        locked_at: UTC ISO time of the lock, ``None`` before it is locked.
        source: the file it was locked from.
        design: the stop rule's design (``effect``, ``alpha``, ``discordant``), when the plan
            declares one (``design:``).

    >>> p = parse_prereg("comparisons: [[A, B]]", name="demo")
    >>> p.comparisons, p.locked_at, len(p.sha256)
    ((('A', 'B'),), None, 64)
    """

    name: str
    sha256: str
    text: str
    session_id: str | None
    primary_metric: str
    comparisons: tuple[tuple[str, str], ...]
    groupings: tuple[Grouping, ...]
    positive_control_floor: float | None
    notes: str | None
    locked_at: str | None = None
    source: str | None = None
    design: dict[str, Any] | None = None

    def policies(self) -> set[str]:
        """Every policy the plan names."""
        named = {p for pair in self.comparisons for p in pair}
        for g in self.groupings:
            named.update(g.members[0])
            named.update(g.members[1])
        return named

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (tuples as lists; ``design`` only when declared)."""
        out: dict[str, Any] = asdict(self)
        if out["design"] is None:
            del out["design"]
        return out


def parse_prereg(
    text: str, *, name: str | None = None, source: str | None = None
) -> Preregistration:
    """Parse and validate a pre-registration's YAML text (nothing is stored).

    Args:
        text: the YAML.
        name: the name when the YAML has no ``name:`` (e.g. the file's stem).
        source: where the text came from (kept with the lock).

    Returns:
        An unlocked :class:`Preregistration`.

    The fields are validated by :class:`~evalband.session._files.PreregSpec` (pydantic).

    Raises:
        InvalidInputError: bad YAML, unknown fields, no comparison and no grouping, a
            malformed pair or grouping, an unsupported primary metric, or a bad floor.

    >>> p = parse_prereg('''
    ... name: norm
    ... comparisons: [GN vs BN]
    ... groupings: {family: {bn: [BN, BN2], gn: [GN]}}
    ... ''')
    >>> p.name, p.comparisons, p.groupings[0].title
    ('norm', (('GN', 'BN'),), 'bn vs gn')
    """
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "bad YAML"
        raise InvalidInputError(f"the pre-registration is not valid YAML: {first}") from None
    if not isinstance(data, Mapping):
        raise InvalidInputError(
            "a pre-registration is a YAML mapping with comparisons: and/or groupings:; got "
            f"{type(data).__name__}"
        )
    from pydantic import ValidationError

    from evalband.session._files import PreregSpec, one_line

    try:
        spec = PreregSpec.model_validate(data)
    except ValidationError as exc:
        raise InvalidInputError(
            one_line(exc, list(PreregSpec.model_fields), "pre-registration")
        ) from None
    chosen = spec.name if spec.name is not None else name
    if chosen is None:
        raise InvalidInputError("a pre-registration needs a name: (or a file to take it from)")
    pname = str(chosen).strip()
    check_name(pname, "pre-registration name", 64)
    return Preregistration(
        name=pname,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        text=text,
        session_id=spec.session,
        primary_metric=spec.primary_metric,
        comparisons=tuple(spec.comparisons),
        groupings=tuple(
            Grouping(gname, (first[0], second[0]), (tuple(first[1]), tuple(second[1])))
            for gname, (first, second) in spec.groupings.items()
        ),
        positive_control_floor=spec.positive_control_floor,
        notes=spec.notes,
        locked_at=None,
        source=source,
        design=None if spec.design is None else {
            "effect": spec.design.effect, "alpha": spec.design.alpha,
            "discordant": spec.design.discordant},
    )


def _from_row(row: Sequence[Any]) -> Preregistration:
    name, sha, locked_at, source, text = row
    parsed = parse_prereg(str(text), name=str(name), source=source)
    if parsed.sha256 != str(sha):
        raise PreregistrationError(
            f"pre-registration {name!r} in the store does not match its recorded sha256 "
            f"({str(sha)[:12]} recorded, {parsed.sha256[:12]} now): the locked text was changed"
        )
    return replace(parsed, name=str(name), locked_at=str(locked_at))


def _has_table(runs: RunStore) -> bool:
    row = runs.conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'preregistrations'"
    ).fetchone()
    return row is not None


def _store_path(store: str | Path | None) -> Path:
    return DEFAULT_STORE_PATH if store is None else Path(store)


def lock_prereg(
    path: str | Path, *, store: str | Path | None = None, now: datetime | None = None
) -> tuple[Preregistration, bool]:
    """Lock a pre-registration file into the store: its text, sha256 and the time.

    When the plan names a session that is already stored, every policy it names must be one
    of that session's policies.

    Args:
        path: the YAML file.
        store: the run store file (the default store when ``None``).
        now: the lock time (UTC now when ``None``; for tests).

    Returns:
        ``(preregistration, created)``: ``created`` is False when the same text was already
        locked under this name (the first lock is returned, its time unchanged).

    Raises:
        InvalidInputError: an unreadable or invalid file, or policies the named session
            does not have.
        PreregistrationError: the name is locked with different content.
        StoreError: the store cannot be opened.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "plan.yaml").write_text("comparisons: [[A, B]]")
    >>> p, created = lock_prereg(d / "plan.yaml", store=d / "s.sqlite")
    >>> p.name, created, lock_prereg(d / "plan.yaml", store=d / "s.sqlite")[1]
    ('plan', True, False)
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read the pre-registration {file}: {exc}") from None
    try:
        prereg = parse_prereg(text, name=file.stem, source=str(file))
    except InvalidInputError as exc:
        raise InvalidInputError(f"pre-registration {file}: {exc}") from None
    when = (now or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="milliseconds")
    with RunStore(_store_path(store)) as runs:
        if prereg.session_id is not None:
            _check_session_policies(runs, prereg)
        with runs.transaction() as conn:
            row = conn.execute(_SELECT + " WHERE name = ?", (prereg.name,)).fetchone()
            if row is None:
                conn.execute(
                    'INSERT INTO preregistrations ("name", "sha256", "locked_at", "session_id", '
                    '"source", "yaml") VALUES (?, ?, ?, ?, ?, ?)',
                    (prereg.name, prereg.sha256, when, prereg.session_id, str(file), text),
                )
                created = True
            else:
                created = False
        if not created:
            existing = _from_row(row)
            if existing.sha256 != prereg.sha256:
                raise PreregistrationError(
                    f"pre-registration {prereg.name!r} was locked at {existing.locked_at} with "
                    f"different content (sha256 {existing.sha256[:12]}, this file "
                    f"{prereg.sha256[:12]}); a locked plan cannot change: lock the new plan "
                    "under a new name (name: in the YAML)"
                )
            return existing, False
    return replace(prereg, locked_at=when), True


def _check_session_policies(runs: RunStore, prereg: Preregistration) -> None:
    import json

    has = runs.conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sessions'"
    ).fetchone()
    if has is None:
        return
    row = runs.conn.execute(
        "SELECT policies FROM sessions WHERE session_id = ?", (prereg.session_id,)
    ).fetchone()
    if row is None:
        return  # planned before the session: the usual order
    policies = [str(p) for p in json.loads(row[0])]
    unknown = sorted(prereg.policies() - set(policies))
    if unknown:
        raise InvalidInputError(
            f"pre-registration {prereg.name!r} names {', '.join(unknown)}, not among the "
            f"policies of session {prereg.session_id!r} ({', '.join(policies)})"
        )


def list_preregs(store: str | Path | None = None) -> list[Preregistration]:
    """Every locked pre-registration, oldest lock first.

    Raises:
        StoreError: no store at the path, or not an evalband store.
    """
    with RunStore(_store_path(store), read_only=True) as runs:
        if not _has_table(runs):
            return []
        rows = runs.conn.execute(_SELECT + " ORDER BY locked_at, rowid").fetchall()
    return [_from_row(r) for r in rows]


def get_prereg(name: str, store: str | Path | None = None) -> Preregistration:
    """One locked pre-registration by name.

    Raises:
        PreregistrationError: no pre-registration of that name (the message lists them).
        StoreError: no store at the path, or not an evalband store.
    """
    found = list_preregs(store)
    for prereg in found:
        if prereg.name == name:
            return prereg
    names = ", ".join(p.name for p in found) or "none locked yet (evalband prereg lock PLAN.yaml)"
    raise PreregistrationError(f"no pre-registration named {name!r}; locked: {names}")


def prereg_for_session(session_id: str, store: str | Path | None = None) -> Preregistration | None:
    """The pre-registration that names ``session_id`` (``session:``), if exactly one does.

    Returns:
        It, or ``None`` when none names the session.

    Raises:
        PreregistrationError: several name it (choose one by name).
    """
    named = [p for p in list_preregs(store) if p.session_id == session_id]
    if len(named) > 1:
        raise PreregistrationError(
            f"{len(named)} pre-registrations name session {session_id!r} "
            f"({', '.join(p.name for p in named)}); choose one by its name (`prereg`)",
            parameters=("prereg",),
        )
    return named[0] if named else None
