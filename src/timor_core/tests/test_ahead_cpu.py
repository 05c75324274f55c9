"""Kernels built ahead of time for this machine's CPU (``common/ahead.py``, ``common/ahead_build.py``): a build is
named by the CPU it was made for (its model and feature flags), so a build made for another CPU (copied in a wheel,
an image or a shared folder, where its AVX-512 instructions could kill the process) is never loaded: the caller falls
back as for a stale build; a build for any CPU (``--generic``) is the second choice; numba's compiler is put back
after a build for the host."""

from __future__ import annotations

import re
import shutil
import subprocess
import types
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from timor_core.common import ahead, ahead_build
from timor_core.common.ahead import AheadKernels, cpu_identity, host_cpu
from timor_core.errors import TimorError

pytestmark = pytest.mark.xdist_group("ahead_cpu")  # (one worker builds the module-scoped ``builds`` once)

_INFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 26
model\t\t: 2
model name\t: AMD EPYC
cpu MHz\t\t: 2596.120
flags\t\t: fpu sse sse2 avx avx2 fma avx512f avx512bw
bogomips\t: 5192.24

processor\t: 1
vendor_id\t: AuthenticAMD
flags\t\t: fpu sse sse2
"""


def _tiny(x: float) -> float:
    return 3.0 * x


def _scaled(x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.shape[0]):
        out[i] = 3.0 * x[i] + 1.0


def test_the_cpu_name_hashes_its_model_and_every_flag():
    """The name changes with any flag, the model or the vendor; not with the flags' order, the clock or the other
    processors' blocks; no name without flags."""
    name = cpu_identity(_INFO)
    assert name is not None and len(name) == 12
    assert cpu_identity(_INFO.replace("cpu MHz\t\t: 2596.120", "cpu MHz\t\t: 3000.000")) == name
    assert cpu_identity(_INFO.replace("fpu sse sse2 avx", "sse2 fpu sse avx")) == name
    assert cpu_identity(_INFO.split("\n\n")[0]) == name
    changes = {"avx512f avx512bw": "avx512f", "avx512f": "", "model\t\t: 2": "model\t\t: 1",
               "AuthenticAMD": "GenuineIntel", "AMD EPYC": "Intel Xeon"}  # fmt: skip
    for old, new in changes.items():
        assert cpu_identity(_INFO.replace(old, new, 1)) not in (None, name), old
    assert cpu_identity(_INFO.split("flags")[0]) is None


def test_a_build_for_the_host_is_named_by_its_cpu_and_the_generic_one_is_not(tmp_path):
    """This machine's build name ends in its CPU's name (where it has one: Linux on x86-64), the generic one does not;
    both hash the same sources."""
    kernels = AheadKernels("tiny_aot", "tiny kernels", [Path(__file__)], lambda: tmp_path, ["tiny"], lambda m: m)
    host, generic = kernels.path(), kernels.path(generic=True)
    assert generic.name.split(".")[0].count("_") == 2
    if host_cpu() is None:
        assert host == generic
    else:
        assert host.name.split(".")[0] == f"{generic.name.split('.')[0]}_{host_cpu()}"


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AheadKernels[object], Path, Path]]:
    """A one-kernel module built for this CPU and for any CPU (~2.5 CPU-s each) in a folder of their own."""
    folder = tmp_path_factory.mktemp("cpu")
    kernels = AheadKernels("tiny_aot", "tiny kernels", [Path(__file__)], lambda: folder, ["tiny"], lambda m: m)
    exports = {"tiny": (_tiny, "f8(f8)"), "scaled": (_scaled, "void(f8[::1], f8[::1])")}
    host = ahead_build.build_kernels(kernels, folder, exports, ahead_build.CC)
    generic = ahead_build.build_kernels(kernels, folder, exports, ahead_build.CC, generic=True)
    assert host.is_file() and generic.is_file()
    yield kernels, host, generic


@pytest.mark.slow
def test_a_build_named_for_another_cpu_is_not_loaded(builds, monkeypatch):
    """The host's build loads first; on a CPU of another name (a copy on another machine) it is not loaded: the
    generic build is, and without one none is (the caller then runs numba's kernels by the rule, or ``make``
    builds for that CPU)."""
    kernels, host, generic = builds
    if host == generic:
        pytest.skip("builds are for any CPU here (not Linux on x86-64)")
    kernels.forget()
    module = kernels.get()
    assert module is not None and Path(module.__file__) == host and module.tiny(2.0) == 6.0
    monkeypatch.setattr(ahead, "host_cpu", lambda: "0123456789ab")
    kernels.forget()
    module = kernels.get()
    assert module is not None and Path(module.__file__) == generic and module.tiny(2.0) == 6.0
    kept = generic.with_name(generic.name + ".away")
    generic.rename(kept)
    try:
        kernels.forget()
        assert host.is_file() and kernels.get() is None
    finally:
        kept.rename(generic)


def test_a_build_for_the_host_compiles_as_numbas_jit_and_puts_the_compiler_back():
    """Inside ``host_features`` numba's ahead-of-time compiler takes the host's features as numba's JIT does (here,
    where ``/proc/cpuinfo`` lists every vector feature of them, the very list), and gets its own method back after (a
    generic build takes none: numba's default)."""
    from numba.core import codegen

    before = codegen.AOTCPUCodegen.__dict__["_customize_tm_features"]
    assert ahead_build.can_target_host() == (host_cpu() is not None)
    jit = types.SimpleNamespace(_get_host_cpu_features=codegen.get_host_cpu_features)
    with ahead_build.host_features():
        features = codegen.AOTCPUCodegen._customize_tm_features(jit)
    assert codegen.AOTCPUCodegen.__dict__["_customize_tm_features"] is before
    if ahead_build.unvouched_features(codegen.get_host_cpu_features(), ahead.cpu_flags()) == []:
        assert features == codegen.get_host_cpu_features()


@pytest.mark.parametrize("variable", ["NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES"])
def test_numbas_cpu_variables_make_the_build_generic(monkeypatch, variable):
    """numba builds for what ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` say (even set empty), which a build named by
    this CPU would hide: with either set, no build is for the host (``build_kernels`` names it generic)."""
    if host_cpu() is None:
        pytest.skip("builds here are generic anyway (not Linux on x86-64)")
    assert ahead_build.can_target_host() or not hasattr(ahead_build.CODEGEN.AOTCPUCodegen, "_customize_tm_features")
    monkeypatch.setenv(variable, "")
    assert not ahead_build.can_target_host()


@pytest.mark.slow
def test_the_generic_build_has_no_vector_instructions_beyond_sse(builds):
    """The build for any CPU runs on any x86-64 (no AVX registers in its code, where ``objdump`` can tell); this CPU's
    uses them where the CPU has AVX (the loop of ``_scaled`` vectorised)."""
    _, host, generic = builds
    if shutil.which("objdump") is None or host == generic:
        pytest.skip("no objdump, or builds are for any CPU here")
    code = {p: subprocess.run(["objdump", "-d", str(p)], capture_output=True, text=True, check=True).stdout
            for p in (host, generic)}  # fmt: skip
    assert not re.search(r"%[yz]mm", code[generic])
    if " avx" in Path("/proc/cpuinfo").read_text():
        assert re.search(r"%[yz]mm", code[host])


@pytest.mark.slow
@pytest.mark.parametrize("hidden_from", ["jit", "cpuinfo"])
def test_a_build_for_the_host_takes_numbas_jit_features_not_the_models(tmp_path, monkeypatch, hidden_from):
    """A build for this CPU compiles with the features numba's JIT takes here (which a virtual machine's masking
    reaches), not those its model name implies, less those ``/proc/cpuinfo`` does not list: with AVX stripped from the
    JIT's features, or hidden from ``/proc/cpuinfo``'s flags (turned off last, it turns off every feature that implies
    it: AVX2, FMA, AVX-512), the build is named by this CPU and has no AVX registers (it would with the model's:
    ``host_features`` left out)."""
    from numba.core import config

    if shutil.which("objdump") is None or not ahead_build.can_target_host():
        pytest.skip("no objdump, or builds are for any CPU here")
    if hidden_from == "jit":
        monkeypatch.setattr(config, "CPU_FEATURES", "+sse2,-avx,-avx2,-avx512f")
    else:
        monkeypatch.setattr(ahead_build, "cpu_flags", lambda: ahead.cpu_flags() - {"avx"})
    kernels = AheadKernels("masked_aot", "masked kernels", [Path(__file__)], lambda: tmp_path, ["scaled"], lambda m: m)
    built = ahead_build.build_kernels(
        kernels, tmp_path, {"scaled": (_scaled, "void(f8[::1], f8[::1])")}, ahead_build.CC
    )
    assert built.name.split(".")[0].endswith(f"_{host_cpu()}")
    code = subprocess.run(["objdump", "-d", str(built)], capture_output=True, text=True, check=True).stdout
    assert "scaled" in code and not re.search(r"%[yz]mm", code)


@pytest.mark.parametrize(("flags", "generic"), [(["--generic", "--with-ik"], True), (["--with-ik"], False)])
def test_the_build_commands_generic_flag_reaches_every_set(monkeypatch, flags, generic):
    """``proof_aot --generic --with-ik`` builds the proofs', the look-up's cover, the cut's and the IK's kernels each
    for any CPU (``build_kernels(..., generic=True)``), without ``--generic`` each for this one (nothing compiled: the
    builder records what it is asked)."""
    from timor_core.kinematics import ik_aot
    from timor_core.search.filtering import proof_aot

    asked: dict[str, bool] = {}

    def record(kernels: AheadKernels, folder: Path | None, exports: dict, cc: object, wants: bool = False) -> Path:
        asked[kernels.prefix] = wants
        return kernels.path(folder, generic=wants)

    for module in (proof_aot, ik_aot):
        monkeypatch.setattr(module, "build_kernels", record)
    assert proof_aot.main(flags) == 0
    assert asked == dict.fromkeys(("proof_aot", "cover_aot", "cut_aot", "ik_aot"), generic)


def test_a_build_for_the_host_must_be_named_by_its_cpu(tmp_path, monkeypatch):
    """``build_module(host=True)`` refuses a target not named ``..._<this cpu>`` (the generic name, another CPU's)
    with a TimorError before it looks at the file or the compiler; named so, or not for the host, it goes on (here to
    the missing compiler's error); without a CPU name no build is for the host."""
    monkeypatch.setattr(ahead_build, "host_cpu", lambda: "0123456789ab")
    generic = tmp_path / "tiny_aot_0123456789abcdef.so"
    for wrong in (generic, generic.with_name("tiny_aot_0123456789abcdef_ba9876543210.so")):
        wrong.write_bytes(b"")  # (an existing file is not returned either)
        with pytest.raises(TimorError, match="must be named by it"):
            ahead_build.build_module(wrong, {}, "tiny kernels", None, host=True)
    right = generic.with_name("tiny_aot_0123456789abcdef_0123456789ab.so")
    with pytest.raises(TimorError, match="no ahead-of-time compiler"):
        ahead_build.build_module(right, {}, "tiny kernels", None, host=True)
    assert ahead_build.build_module(generic, {}, "tiny kernels", None) == generic  # (built: there)
    monkeypatch.setattr(ahead_build, "host_cpu", lambda: None)
    with pytest.raises(TimorError, match="must be named by it"):
        ahead_build.build_module(tmp_path / "tiny_aot_0123456789abcdef_None.so", {}, "tiny kernels", None, host=True)


def test_every_vector_feature_of_a_host_build_must_be_listed_by_proc_cpuinfo():
    """A host build's name vouches only for ``/proc/cpuinfo``'s flags: a vector feature LLVM turns on that the flags
    do not list, under any of their spellings there, is named; off features and non-vector ones are not."""
    features = "+64bit,+avx2,+avx512f,-avx512bw,+sse4.2,+avx512vnni,+sse3,+bmi,+avxvnni,+crc32,+fma,+lzcnt,+popcnt"
    flags = frozenset({"avx2", "sse4_2", "avx512_vnni", "pni", "bmi1", "avx_vnni", "fma", "abm", "popcnt"})
    assert ahead_build.unvouched_features(features, flags) == ["avx512f"]
    assert ahead_build.unvouched_features(features, flags | {"avx512f"}) == []
    assert ahead_build.unvouched_features(features, (flags | {"avx512f"}) - {"pni"}) == ["sse3"]
    assert ahead_build.unvouched_features(features, (flags | {"avx512f"}) - {"abm", "popcnt"}) == ["lzcnt", "popcnt"]


def test_a_feature_proc_cpuinfo_does_not_list_is_turned_off_last():
    """The features a build for the host takes: LLVM's, each unvouched one turned off after all others (LLVM reads
    them in order: ``+avx512f`` after ``-avx2`` would turn AVX2 on again), the rest as they were."""
    features = "+avx,+avx2,+avx512f,-avx512bw,+avxvnniint8,+sse4.2,+crc32"
    flags = frozenset({"avx", "avx512f", "sse4_2"})
    assert ahead_build.vouched_features(features, flags) == "+avx,+avx512f,-avx512bw,+sse4.2,+crc32,-avx2,-avxvnniint8"
    vouched = ahead_build.vouched_features(features, flags | {"avx2"})
    assert vouched == "+avx,+avx2,+avx512f,-avx512bw,+sse4.2,+crc32,-avxvnniint8"
    assert ahead_build.vouched_features("", flags) == ""


def test_a_cpuinfo_that_hides_a_feature_numba_would_use_leaves_it_out_of_the_host_build(monkeypatch):
    """Here every vector feature numba's JIT uses is among ``/proc/cpuinfo``'s flags (so a build for the host takes
    them all); with one of them hidden from the flags, the build for the host is still for the host, without it."""
    if not ahead_build.can_target_host():
        pytest.skip("builds here are generic anyway")
    from numba.core import codegen

    features = ahead_build.CODEGEN.get_host_cpu_features()
    assert ahead_build.unvouched_features(features, ahead.cpu_flags()) == []
    used = [f[1:] for f in features.split(",") if f.startswith("+") and f[1:].startswith(("sse4.2", "sse4.1", "avx"))]
    assert used, features
    hidden = ahead.cpu_flags() - {used[0], used[0].replace(".", "_")}
    monkeypatch.setattr(ahead_build, "cpu_flags", lambda: hidden)
    assert ahead_build.can_target_host()
    jit = types.SimpleNamespace(_get_host_cpu_features=lambda: features)
    with ahead_build.host_features():
        built = codegen.AOTCPUCodegen._customize_tm_features(jit).split(",")
    assert built[-1] == f"-{used[0]}" and f"+{used[0]}" not in built
