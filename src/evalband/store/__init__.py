"""The run store (SQLite, WAL) and artifact bundles (manifest + panel + parquet).

Names load on first use: a run needs the store, not the bundle and import readers.

>>> import tempfile
>>> from pathlib import Path
>>> from evalband.store import open_store
>>> with tempfile.TemporaryDirectory() as d, open_store(Path(d) / "runs.sqlite") as store:
...     store.list_runs()
[]
"""

from typing import TYPE_CHECKING

from evalband._util.imports import lazy_attributes

if TYPE_CHECKING:
    from evalband.store._bundle import BUNDLE_FORMAT, export_bundle, import_bundle, load_bundle
    from evalband.store._columns import (
        OUTCOME_CODES,
        WHERE,
        cell_tallies,
        column_tallies,
        error_messages,
    )
    from evalband.store._export_lerobot_eval import eval_info, export_eval_info
    from evalband.store._export_rerun import RerunExport, episode_entity, export_rerun
    from evalband.store._importers import (
        IMPORT_COLUMNS,
        IMPORT_FORMATS,
        import_results,
        import_runs,
    )
    from evalband.store._lease import RunLease, discard_empty_run
    from evalband.store._manifest import (
        RunManifest,
        check_step,
        environment_versions,
        git_sha,
        new_manifest,
    )
    from evalband.store._media import (
        CONTENT_TYPES,
        content_type_of,
        media_dir,
        media_file,
        store_media_bytes,
        store_media_file,
        sync_media,
    )
    from evalband.store._refs import RunRef, is_bundle_path, looks_like_path, resolve_run
    from evalband.store._scores import RESERVED_SCORERS, add_scores, parse_label, read_labels
    from evalband.store._session_runs import (
        TRIAL_FIELDS,
        create_session_runs,
        mark_finished,
        read_trials,
        scene_cell,
        session_panel,
        trial_episode,
        trial_fields,
    )
    from evalband.store._sqlite import (
        DEFAULT_STORE_PATH,
        RunStore,
        damage_line,
        is_damage,
        open_store,
        read_failure_line,
    )
    from evalband.store._steps import (
        MAX_STEP_BYTES,
        STEPS_CONTENT_TYPE,
        STEPS_KEY,
        StepData,
        decode_steps,
        encode_steps,
        read_steps,
        steps_ref,
    )

__all__ = [
    "TRIAL_FIELDS",
    "create_session_runs",
    "mark_finished",
    "read_trials",
    "scene_cell",
    "session_panel",
    "trial_episode",
    "trial_fields",
    "RunStore",
    "damage_line",
    "is_damage",
    "read_failure_line",
    "RunManifest",
    "open_store",
    "DEFAULT_STORE_PATH",
    "export_bundle",
    "load_bundle",
    "import_bundle",
    "environment_versions",
    "git_sha",
    "new_manifest",
    "check_step",
    "BUNDLE_FORMAT",
    "import_results",
    "import_runs",
    "media_dir",
    "media_file",
    "store_media_bytes",
    "store_media_file",
    "sync_media",
    "IMPORT_FORMATS",
    "IMPORT_COLUMNS",
    "RunRef",
    "resolve_run",
    "looks_like_path",
    "is_bundle_path",
    "OUTCOME_CODES",
    "cell_tallies",
    "column_tallies",
    "WHERE",
    "error_messages",
    "RunLease",
    "discard_empty_run",
    "CONTENT_TYPES",
    "content_type_of",
    "eval_info",
    "export_eval_info",
    "RESERVED_SCORERS",
    "add_scores",
    "parse_label",
    "read_labels",
    "MAX_STEP_BYTES",
    "STEPS_CONTENT_TYPE",
    "STEPS_KEY",
    "StepData",
    "decode_steps",
    "encode_steps",
    "read_steps",
    "steps_ref",
    "RerunExport",
    "export_rerun",
    "episode_entity",
]

_LAZY = {
    "TRIAL_FIELDS": "evalband.store._session_runs",
    "create_session_runs": "evalband.store._session_runs",
    "mark_finished": "evalband.store._session_runs",
    "read_trials": "evalband.store._session_runs",
    "scene_cell": "evalband.store._session_runs",
    "session_panel": "evalband.store._session_runs",
    "trial_episode": "evalband.store._session_runs",
    "trial_fields": "evalband.store._session_runs",
    "BUNDLE_FORMAT": "evalband.store._bundle",
    "export_bundle": "evalband.store._bundle",
    "import_bundle": "evalband.store._bundle",
    "load_bundle": "evalband.store._bundle",
    "IMPORT_COLUMNS": "evalband.store._importers",
    "IMPORT_FORMATS": "evalband.store._importers",
    "import_results": "evalband.store._importers",
    "import_runs": "evalband.store._importers",
    "RunManifest": "evalband.store._manifest",
    "environment_versions": "evalband.store._manifest",
    "git_sha": "evalband.store._manifest",
    "new_manifest": "evalband.store._manifest",
    "check_step": "evalband.store._manifest",
    "media_dir": "evalband.store._media",
    "media_file": "evalband.store._media",
    "store_media_bytes": "evalband.store._media",
    "store_media_file": "evalband.store._media",
    "sync_media": "evalband.store._media",
    "RunRef": "evalband.store._refs",
    "is_bundle_path": "evalband.store._refs",
    "looks_like_path": "evalband.store._refs",
    "resolve_run": "evalband.store._refs",
    "DEFAULT_STORE_PATH": "evalband.store._sqlite",
    "RunStore": "evalband.store._sqlite",
    "damage_line": "evalband.store._sqlite",
    "is_damage": "evalband.store._sqlite",
    "read_failure_line": "evalband.store._sqlite",
    "open_store": "evalband.store._sqlite",
    "OUTCOME_CODES": "evalband.store._columns",
    "cell_tallies": "evalband.store._columns",
    "column_tallies": "evalband.store._columns",
    "WHERE": "evalband.store._columns",
    "error_messages": "evalband.store._columns",
    "RunLease": "evalband.store._lease",
    "discard_empty_run": "evalband.store._lease",
    "CONTENT_TYPES": "evalband.store._media",
    "content_type_of": "evalband.store._media",
    "eval_info": "evalband.store._export_lerobot_eval",
    "export_eval_info": "evalband.store._export_lerobot_eval",
    "RESERVED_SCORERS": "evalband.store._scores",
    "add_scores": "evalband.store._scores",
    "parse_label": "evalband.store._scores",
    "read_labels": "evalband.store._scores",
    "MAX_STEP_BYTES": "evalband.store._steps",
    "STEPS_CONTENT_TYPE": "evalband.store._steps",
    "STEPS_KEY": "evalband.store._steps",
    "StepData": "evalband.store._steps",
    "decode_steps": "evalband.store._steps",
    "encode_steps": "evalband.store._steps",
    "read_steps": "evalband.store._steps",
    "steps_ref": "evalband.store._steps",
    "RerunExport": "evalband.store._export_rerun",
    "export_rerun": "evalband.store._export_rerun",
    "episode_entity": "evalband.store._export_rerun",
}

__getattr__ = lazy_attributes(__name__, _LAZY)
