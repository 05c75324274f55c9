"""Build entry point for pip and for colcon (ament_python); the metadata is in setup.cfg.

The package data (module sets, tasks, hardware profiles) is listed file by file here because setuptools before
62.3 (Ubuntu 22.04's 59.6) does not expand ``**`` in package_data patterns.
"""

import os

from setuptools import setup

package_name = "timor_core"


def package_data() -> list[str]:
    """Every file under timor_core/data, relative to the package, plus the PEP 561 marker."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), package_name)
    found = ["py.typed"]
    for folder, _dirs, files in os.walk(os.path.join(root, "data")):
        found += [os.path.relpath(os.path.join(folder, f), root) for f in files if not f.endswith(".pyc")]
    return sorted(found)


setup(
    # here, not in setup.cfg: setuptools 59.6 turns it into a SpecifierSet there, which colcon cannot read back
    python_requires=">=3.10",
    package_data={package_name: package_data()},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{package_name}"]),
        (f"share/{package_name}", ["package.xml"]),
    ],
)
