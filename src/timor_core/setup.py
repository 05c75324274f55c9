"""ament_python entry point: colcon builds the package from here; metadata lives in pyproject.toml."""

from setuptools import setup

package_name = "timor_core"

setup(
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{package_name}"]),
        (f"share/{package_name}", ["package.xml"]),
    ],
)
