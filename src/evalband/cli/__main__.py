"""``python -m evalband.cli``."""

from evalband.cli import main

raise SystemExit(main())
