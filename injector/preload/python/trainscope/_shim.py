# SPDX-License-Identifier: Apache-2.0
"""The shim proper: finds the preloaded C library and hooks the program's step
boundaries, data loading, garbage collection, exceptions and hang dumps into it."""
import contextlib
import os
import stat
import sys
import threading

DATALOADER, COMPUTE, CHECKPOINT, GC = 1, 2, 3, 6
NOTE_EXCEPTION, NOTE_GROUPS = 1, 2

_lib = None
_step = 0
_step_lock = threading.Lock()
_first_optimizer = None
_stacks_file = None
_groups = []
_rank_told = False
_outer = 0  # depth of framework step calls under way (_outer_step)


def _load():
    """The C library when it is in the process, else None: not preloaded (a musl Python
    skips the glibc preload), or a Python without ctypes. Never raises, says nothing."""
    try:
        import ctypes
        lib = ctypes.CDLL(None)
        lib.trainscope_step_end
    except Exception:
        return None  # everything stays a no-op
    for name, args in (("trainscope_step_begin", [ctypes.c_uint64]),
                       ("trainscope_step_end", [ctypes.c_uint64]),
                       ("trainscope_region_begin", [ctypes.c_int]),
                       ("trainscope_region_end", [ctypes.c_int]),
                       ("trainscope_set_dump_signal", [ctypes.c_int]),
                       ("trainscope_note", [ctypes.c_int]),
                       ("trainscope_set_rank", [ctypes.c_int32] * 3),
                       ("trainscope_side_path",
                        [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t])):
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = ctypes.c_int if name in ("trainscope_side_path",
                                              "trainscope_set_rank") else None
    return lib


def _side_path(suffix):
    import ctypes
    buf = ctypes.create_string_buffer(4096)
    if _lib.trainscope_side_path(suffix.encode(), buf, len(buf)) != 0:
        return None
    return buf.value.decode()


def _open_side(path):
    """Opens a file beside the ring for writing, with the ring's mode: 0660 in a setgid
    ring folder, whose group (the relay's) reads it whatever this process's uid, 0600
    otherwise; fchmod, unlike the mode given to open, ignores the umask."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        if os.stat(os.path.dirname(path)).st_mode & stat.S_ISGID:
            os.fchmod(fd, 0o660)
        return os.fdopen(fd, "w")
    except BaseException:
        os.close(fd)
        raise


def _arm_hang_dump():
    """faulthandler writes every thread's stack into the ring's .stacks file when the
    library's hang watch raises the signal (from its own thread, synchronously)."""
    global _stacks_file
    import faulthandler
    import signal
    path = _side_path(".stacks")
    if not path:
        return
    sig = int(os.environ.get("TRAINSCOPE_DUMP_SIGNAL", signal.SIGRTMIN + 5))
    _stacks_file = _open_side(path)
    faulthandler.register(sig, file=_stacks_file, all_threads=True, chain=False)
    _lib.trainscope_set_dump_signal(sig)


def _local_rank(torch, at_step):
    """LOCAL_RANK when the launcher set it; else, from the first step on (once the
    program has chosen its device: mp.spawn programs call set_device(rank) after
    init_process_group), the CUDA device it chose; else -1."""
    v = os.environ.get("LOCAL_RANK", "")
    if v.isdigit():
        return int(v)
    try:
        if at_step and torch.cuda.is_initialized():
            return int(torch.cuda.current_device())
    except Exception:
        pass
    return -1


def _tell_rank(at_step=False):
    """The rank the program established (torch.distributed's default group) goes to the
    library: launchers that set no RANK (Lightning's, mp.spawn, Ray) are covered. Told
    at init_process_group, and again at the first step when the local rank was not
    known then. True once told for good."""
    global _rank_told
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return False
        rank, world = dist.get_rank(), dist.get_world_size()
        local = _local_rank(sys.modules["torch"], at_step)
    except Exception:
        return False
    rc = _lib.trainscope_set_rank(rank, world, local)
    _rank_told = rc != -16 and (local >= 0 or at_step)  # -EBUSY: another thread is telling
    return _rank_told


def step():
    """Ends the current step and begins the next."""
    global _step
    if _lib is None:
        return
    if not _rank_told:  # a group made elsewhere, or the device chosen after it
        _tell_rank(at_step=True)
    with _step_lock:
        if _step == 0 and _stacks_file is None:
            try:
                _arm_hang_dump()
            except Exception as e:
                sys.stderr.write("trainscope: no hang dump: %r\n" % (e,))
        _lib.trainscope_step_end(_step)
        _step += 1
        _lib.trainscope_step_begin(_step)


@contextlib.contextmanager
def region(kind):
    if _lib is not None:
        _lib.trainscope_region_begin(kind)
    try:
        yield
    finally:
        if _lib is not None:
            _lib.trainscope_region_end(kind)


def _on_gc(phase, info):
    if _step == 0:
        return  # not a training process yet: a launcher must not get a ring
    if phase == "start":
        _lib.trainscope_region_begin(GC)
    else:
        _lib.trainscope_region_end(GC)


def _excepthook_chain(prev):
    def hook(tp, value, tb):
        # a launcher (torchrun's parent has no RANK) must not get a ring for its exit
        if _step == 0 and os.environ.get("RANK") is None:
            return prev(tp, value, tb)
        try:
            import traceback
            path = _side_path(".exc")
            if path:
                with _open_side(path) as f:
                    f.write("%s\n%s\n" % (tp.__name__, value))
                    f.write("".join(traceback.format_exception(tp, value, tb)))
                _lib.trainscope_note(NOTE_EXCEPTION)
        except Exception:
            pass
        prev(tp, value, tb)
    return hook


def _write_groups():
    path = _side_path(".groups")
    if path:
        with _open_side(path) as f:
            f.write("\n".join(_groups) + "\n")
        _lib.trainscope_note(NOTE_GROUPS)


def _wrap(obj, name, make):
    orig = getattr(obj, name, None)
    if orig is None or getattr(orig, "_trainscope", False):
        return
    new = make(orig)
    new._trainscope = True
    setattr(obj, name, new)


def _first(optimizer):
    """True for the optimizer whose steps are the program's steps: the first one seen
    (one step per iteration, however many optimizers)."""
    global _first_optimizer
    if _first_optimizer is None:
        _first_optimizer = id(optimizer)
    return id(optimizer) == _first_optimizer


def _step_post_hook(optimizer, args, kwargs):
    if _outer == 0 and _first(optimizer):  # inside a framework's step it counts itself
        step()


def _outer_step(orig, optimizer_arg=None):
    """A framework's step that may skip the optimizer's (AMP's GradScaler on an overflow,
    DeepSpeed's engine): one step at its end, skipped or not, and the optimizer's own
    steps inside it not counted again. optimizer_arg: the position of the optimizer
    among its arguments, when only the first optimizer's steps count."""
    def call(*a, **k):
        global _outer
        _outer += 1
        try:
            return orig(*a, **k)
        finally:
            _outer -= 1
            opt = a[optimizer_arg] if optimizer_arg is not None and len(a) > optimizer_arg \
                else k.get("optimizer")
            if _outer == 0 and (optimizer_arg is None or opt is None or _first(opt)):
                step()
    return call


def _attach_torch(torch):
    if not os.environ.get("TRAINSCOPE_STEP_FUNC"):
        from torch.optim.optimizer import register_optimizer_step_post_hook
        register_optimizer_step_post_hook(_step_post_hook)
    try:
        from torch.utils.data import dataloader
        _wrap(dataloader._BaseDataLoaderIter, "__next__", lambda orig: _timed(orig, DATALOADER))
    except Exception as e:
        sys.stderr.write("trainscope: dataloader not hooked: %r\n" % (e,))
    try:
        from torch.amp import grad_scaler
        if not os.environ.get("TRAINSCOPE_STEP_FUNC"):  # that function's calls are the steps
            _wrap(grad_scaler.GradScaler, "step", lambda orig: _outer_step(orig, 1))
    except Exception:
        pass  # a torch before torch.amp.GradScaler (2.3): its skipped steps are not seen
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available():
        _wrap(dist, "init_process_group", _after_init)
        _wrap(dist, "new_group", _after_new_group)


def _attach_deepspeed(engine):
    """DeepSpeed's engine takes its optimizer step (or skips it on an fp16 overflow) in
    _take_model_step, once per gradient accumulation boundary."""
    _wrap(engine.DeepSpeedEngine, "_take_model_step", _outer_step)


def _timed(orig, kind):
    def call(*a, **k):
        _lib.trainscope_region_begin(kind)
        try:
            return orig(*a, **k)
        finally:
            _lib.trainscope_region_end(kind)
    return call


def _after_init(orig):
    def call(*a, **k):
        r = orig(*a, **k)
        import torch.distributed as dist
        _tell_rank()
        n = dist.get_world_size()
        _groups.append("world:" + ",".join(str(i) for i in range(n)))
        _write_groups()
        return r
    return call


def _after_new_group(orig):
    def call(*a, **k):
        g = orig(*a, **k)
        ranks = k.get("ranks", a[0] if a else None)
        if ranks is not None:
            _groups.append("group%d:%s" % (len(_groups), ",".join(str(r) for r in ranks)))
            _write_groups()
        return g
    return call


def _attach_step_func(module, spec):
    """TRAINSCOPE_STEP_FUNC=module@object@function: each call of it is one step."""
    _, objname, fname = spec.split("@", 2)
    owner = getattr(module, objname) if objname else module

    def make(orig):
        def call(*a, **k):
            try:
                return orig(*a, **k)
            finally:
                step()
        return call
    _wrap(owner, fname, make)


class _Finder:
    """Runs an attach function right after a watched module has executed, so that
    nothing is imported that the program would not import itself."""

    def __init__(self, watch):
        self.watch = watch  # module name -> attach(module)

    def find_spec(self, name, path=None, target=None):
        attach = self.watch.get(name)
        if attach is None:
            return None
        import importlib.util
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        loader = spec.loader
        exec_module = loader.exec_module

        def run(module):
            exec_module(module)
            self.watch.pop(name, None)
            try:
                attach(module)
            except Exception as e:
                sys.stderr.write("trainscope: %s not hooked: %r\n" % (name, e))
        loader.exec_module = run
        return spec


def install():
    global _lib
    _lib = _load()
    if _lib is None:
        return
    import gc
    gc.callbacks.append(_on_gc)
    sys.excepthook = _excepthook_chain(sys.excepthook)
    watch = {"torch": _attach_torch}
    spec = os.environ.get("TRAINSCOPE_STEP_FUNC")
    if not spec:
        watch["deepspeed.runtime.engine"] = _attach_deepspeed
    if spec and spec.count("@") == 2:
        watch[spec.split("@", 1)[0]] = lambda m: _attach_step_func(m, spec)
    sys.meta_path.insert(0, _Finder(watch))
