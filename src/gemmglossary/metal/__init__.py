"""The Apple GPU backend: ``.metal`` files compiled and dispatched with the Metal API
through PyObjC (macOS only). See :mod:`.backend`.
"""
