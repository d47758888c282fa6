"""Build hook: the default embedder's model files go into the package first.

Everything else about the build is in pyproject.toml. ``scripts/bundle_model.py``
fetches and checks the model files (see its docstring); it runs before the package's
files are collected, for a wheel, an sdist and an editable install alike.
"""

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist


def _bundle() -> None:
    path = Path(__file__).resolve().parent / "scripts" / "bundle_model.py"
    spec = importlib.util.spec_from_file_location("memloci_bundle_model", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.ensure()


class BuildPy(build_py):
    def run(self) -> None:
        _bundle()
        super().run()


class Sdist(sdist):
    def run(self) -> None:
        _bundle()
        super().run()


setup(cmdclass={"build_py": BuildPy, "sdist": Sdist})
