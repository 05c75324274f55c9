"""ament_python package of the timor ROS 2 nodes (colcon build, or `pip install -e` next to the PyPI ROS wheels)."""

from glob import glob

from setuptools import find_packages, setup

package_name = "timor_ros"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{package_name}"]),
        (f"share/{package_name}", ["package.xml"]),
        (f"share/{package_name}/launch", glob("launch/*.launch.py")),
        (f"share/{package_name}/rviz", glob("rviz/*.rviz")),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="timor developers",
    maintainer_email="timor@example.org",
    description="ROS 2 nodes of timor: module set parameters, robot description, assembly search",
    license="MIT",
    tests_require=["pytest"],
    entry_points={
        "console_scripts": [
            "modules_db = timor_ros.modules_db:main",
            "assembly = timor_ros.assembly:main",
            "search = timor_ros.search:main",
            "task_scene = timor_ros.task_scene:main",
            "moveit_supervisor = timor_ros.moveit_supervisor:main",
            "task_markers = timor_ros.task_markers:main",
        ],
        # `timor ros ...`: timor (timor_core.cli.plugins) finds the subcommands here, without importing timor_ros
        "timor.cli": ["ros = timor_ros.cli:register"],
    },
)
