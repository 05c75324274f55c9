"""``python -m timor_core.cli ...`` runs the ``timor`` command."""

from timor_core.cli.app import main

raise SystemExit(main())
