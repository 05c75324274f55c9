"""The vendor EDS/DCF files and the drive profiles the vendor-file tests share (test_canopen_vendor_files.py,
test_canopen_vendor_writes.py)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from timor_core import ModuleAssembly
from timor_core.hardware.bringup_routes import route_files
from timor_core.hardware.eds import read_eds
from timor_core.hardware.profiles import HardwareProfile

yaml = pytest.importorskip("yaml")

VENDOR = Path(__file__).parent / "data" / "vendor_eds"
# a mode each drive supports (its 0x6502)
MODE = {"pilz_prbt_0_1.dcf": "profile_position", "schunk_0_63.dcf": "profile_position",
        "technosoft_isd860.dcf": "profile_position", "amd_foc_mc.eds": "profile_velocity"}  # fmt: skip
ROBCO = ["base", "J", "L_250", "J", "gripper"]


def vendor_profile(folder: Path, name: str, **drive) -> Path:
    (folder / "eds").mkdir(parents=True, exist_ok=True)
    if not (folder / "eds" / name).exists():
        shutil.copy(VENDOR / name, folder / "eds" / name)
    eds = read_eds(folder / "eds" / name)
    entry = {"eds": f"eds/{name}", "gear_ratio": 101, "encoder_counts": 4096,
             "operation_mode": MODE.get(name, "cyclic_synchronous_position"), **drive}  # fmt: skip
    if eds.vendor_id is None:
        entry.setdefault("vendor_id", "0x00000ABC")
    if eds.product_code is None:
        entry.setdefault("product_code", "0x00000001")
    path = folder / "profile.json"
    path.write_text(json.dumps({"route": "canopen", "bus": {"first_node_id": 5}, "drives": {"J": entry}}))
    return path


def bus_of(robco: ModuleAssembly, profile: Path) -> dict:
    bus = yaml.safe_load(route_files(robco, HardwareProfile.from_json_file(profile)).files["config/bus/bus.yml"])
    return {k: v for k, v in bus.items() if k not in ("options", "master")}


def edit_eds(path: Path, section: str, **keys: str) -> None:
    """Set keys of one section of an EDS copy (adding the section at the end if it is not there)."""
    text = path.read_text(encoding="latin-1")
    m = re.search(rf"^\[{section}\]\r?\n(.*?)(?=^\[|\Z)", text, re.M | re.S | re.I)
    body = m.group(1) if m else "ParameterName=added by the test\nObjectType=0x7\n"
    for key, value in keys.items():
        if re.search(rf"^{key}=.*$", body, re.M | re.I):
            body = re.sub(rf"^{key}=.*?(\r?)$", rf"{key}={value}\1", body, flags=re.M | re.I)
        else:
            body = f"{key}={value}\n" + body
    if m:
        text = text[: m.start(1)] + body + text[m.end(1) :]
    else:
        text += f"\n[{section}]\n{body}\n"
    path.write_text(text, encoding="latin-1")
