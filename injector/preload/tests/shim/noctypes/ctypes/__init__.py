# SPDX-License-Identifier: Apache-2.0
"""Stands in for the ctypes of a Python built without it (no libffi)."""
raise ImportError("this Python has no ctypes")
