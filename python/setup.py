"""setup.py — the kbc package with libkbc.so bundled in it.

The library comes from $KBC_LIB, else the repository's build/release
(or build/) folder, else a CMake build of the repository made here (a C
compiler, CMake, flex and bison are needed for that).  The version is the
library's (support/version.h)."""
import os
import re
import shutil
import subprocess
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def version():
    with open(os.path.join(REPO, "support", "version.h")) as f:
        m = re.search(r'#define\s+KBC_VERSION\s+"([^"]+)"', f.read())
    return m.group(1) if m else "0.0.0"


def find_or_build_library(tmp):
    env = os.environ.get("KBC_LIB")
    if env:
        if not os.path.isfile(env):
            raise SystemExit(f"KBC_LIB={env}: no such file")
        return env
    for d in ("build/release", "build"):
        p = os.path.join(REPO, d, "libkbc.so")
        if os.path.isfile(p):
            return p
    build = os.path.join(tmp, "build")
    subprocess.check_call(["cmake", "-S", REPO, "-B", build, "-DCMAKE_BUILD_TYPE=Release"])
    subprocess.check_call(["cmake", "--build", build, "--target", "kbc_shared", "--parallel"])
    return os.path.join(build, "libkbc.so")


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        with tempfile.TemporaryDirectory() as tmp:
            lib = os.path.realpath(find_or_build_library(tmp))
            dest = os.path.join(self.build_lib, "kbc", "libkbc.so")
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(lib, dest)


setup(version=version(), cmdclass={"build_py": BuildWithLibrary})
