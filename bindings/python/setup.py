"""Builds libhetreward from the repository's Rust sources into the wheel (setuptools-rust).

The crate's cdylib (../../Cargo.toml) is built by cargo (release profile, the repository's
target directory or CARGO_TARGET_DIR, so a built checkout rebuilds only what changed) and
copied, stripped, into the package as ``hetreward/_libhetreward.so``: one file, which
hetreward._native loads with ctypes (named without a Python tag: it is no extension module). The wheel is tagged ``py3-none-<platform>``: the library
is independent of the Python version (ctypes, no Python C API), but not of the platform.
setuptools' own build folders go under the cargo target directory, not into this folder.
"""

import os
import pathlib

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_ext import build_ext
from setuptools_rust import Binding, RustExtension, Strip

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MANIFEST = ROOT / "Cargo.toml"
if not MANIFEST.is_file():
    raise SystemExit(
        f"hetreward: the Rust sources are not at {ROOT} (build from a checkout of the "
        "repository: pip install ./bindings/python)"
    )
TARGET = pathlib.Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
if not TARGET.is_absolute():
    TARGET = ROOT / TARGET
SCRATCH = TARGET / "python-build"
SCRATCH.mkdir(parents=True, exist_ok=True)


class PlatformWheel(bdist_wheel):
    """Tags the wheel py3-none-<platform>: any Python 3, this platform only."""

    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", platform


class PlainLibraryName(build_ext):
    """Names the library _libhetreward.so, not _libhetreward.cpython-3XY-<platform>.so."""

    def get_ext_filename(self, fullname):
        # Called with the dotted name, or (get_ext_fullpath) with its last part only.
        if LIBRARY == fullname or LIBRARY.endswith("." + fullname):
            return os.path.join(*fullname.split(".")) + ".so"
        return super().get_ext_filename(fullname)


LIBRARY = "hetreward._libhetreward"

setup(
    rust_extensions=[
        RustExtension(
            LIBRARY,
            path=str(MANIFEST),
            binding=Binding.NoBinding,
            # The crate types of Cargo.toml, so that cargo reuses the library that
            # `cargo build --release -p hetreward [--lib]` (scripts/install.sh) built, and
            # vice versa, instead of rebuilding the crate for a cdylib-only build each time
            # (measured: Fresh in 0.2 s either way). A plain `cargo build --release` builds
            # the whole workspace (the CLI too): its unit graph gives the library's build
            # script another fingerprint, so alternating it with `pip install` rebuilds the
            # library each time (~55 s); build the library alone with `-p hetreward` instead.
            args=["--crate-type", "rlib,cdylib,staticlib"],
            py_limited_api=False,
            strip=Strip.All,
        )
    ],
    cmdclass={"bdist_wheel": PlatformWheel, "build_ext": PlainLibraryName},
    options={
        "build": {"build_base": str(SCRATCH / "build")},
        "egg_info": {"egg_base": str(SCRATCH)},
    },
)
