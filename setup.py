# Metadata lives in pyproject.toml; this file only wires the cffi extension.
from setuptools import setup

setup(cffi_modules=["pycraftax/_build.py:ffibuilder"])
