# SPDX-License-Identifier: Apache-2.0
"""trainscope's Python shim, loaded through PYTHONPATH in every Python process of an
annotated pod. It does nothing unless libtrainscope.so is preloaded, never imports
torch itself, and never lets its own failure reach the program."""
import sys


def _install():
    try:
        from trainscope import _shim
        _shim.install()
    except Exception as e:  # the training process is sacred
        sys.stderr.write("trainscope: Python shim disabled: %r\n" % (e,))


def _chain():
    """Runs the sitecustomize this one shadows, if any, as Python would have."""
    import importlib.machinery
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec and spec.origin and os.path.abspath(spec.origin) != os.path.abspath(__file__):
        try:
            code = compile(open(spec.origin).read(), spec.origin, "exec")
            exec(code, {"__name__": "sitecustomize", "__file__": spec.origin})
        except Exception as e:
            sys.stderr.write("trainscope: the shadowed sitecustomize failed: %r\n" % (e,))


_install()
_chain()
