# `pytest exercises/NAME` checks your copy of exercise NAME: see src/gemmglossary/exercises/pytest_plugin.py.
from gemmglossary.exercises.pytest_plugin import (  # noqa: F401
    pytest_addoption, pytest_collect_file, pytest_collection_modifyitems)
