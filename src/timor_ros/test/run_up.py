"""`timor ros up` for the tests. If timor_core.export.srdf (written elsewhere) is not there yet, a stand-in SRDF
writer is installed in this process only, so the tests exercise the node; the product code is unchanged."""

import sys
import types

try:
    import timor_core.export.srdf  # noqa: F401
except ImportError:
    stub = types.ModuleType("timor_core.export.srdf")

    def assembly_to_srdf(assembly, *, name=None, prefix="", n_samples=1000, seed=0, group="manipulator"):
        tree = assembly.tree(prefix)
        return (
            f'<?xml version="1.0"?>\n<robot name="{name or "timor"}">\n'
            f'  <group name="{group}"><chain base_link="{tree.links[0].name}" tip_link="{tree.links[-1].name}"/>'
            "</group>\n</robot>\n"
        )

    stub.assembly_to_srdf = assembly_to_srdf
    stub.STUB = True
    sys.modules["timor_core.export.srdf"] = stub
    import timor_core

    timor_core.export.srdf = stub

from timor_core.cli.app import main  # noqa: E402

sys.exit(main(["ros", "up", *sys.argv[1:]]))
