# SPDX-License-Identifier: Apache-2.0
"""Starts N copies of train.py the way each launcher does, as far as trainscope can
tell them apart: which variables each process has at its start, which are set later
in the process, and which call gives the rank. Faithful to:

  torchrun   RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE at exec; env:// init
  lightning  Lightning's _SubprocessScriptLauncher: the launcher process is local rank 0
             itself; it puts NODE_RANK, LOCAL_RANK and WORLD_SIZE in its own os.environ
             and starts local ranks 1..N-1 as copies with LOCAL_RANK set; no RANK
             anywhere; the global rank goes to init_process_group(rank=...)
  fabric     Lightning Fabric's launch() (the same launcher): the launcher process exits
             when its own loop ends, without waiting for its copies, which may still be
             in their teardown (here 1.5 s of it)
  spawn      torch.multiprocessing.spawn: fresh interpreters (the spawn start method),
             nothing in the environment, the index passed as the rank to
             init_process_group(rank=..., world_size=...)
  ray        Ray Train: workers already running, RANK/WORLD_SIZE/LOCAL_RANK put in
             os.environ after the worker has recorded, then env:// init
  mpi        mpirun (Open MPI; Horovod): OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK, PMIX_RANK
             at exec; no torch.distributed process group
  slurm      srun: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID at exec; no process group
  none       plain copies with nothing at all: no rank can be known

Exits with the first failing child's status."""
import multiprocessing
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CLEAN = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK")


def base_env():
    env = dict(os.environ)
    for k in CLEAN:
        env.pop(k, None)
    return env


def popen(env, argv):
    return subprocess.Popen([sys.executable, os.path.join(HERE, "train.py")] + argv, env=env)


def wait_all(procs):
    rc = 0
    for p in procs:
        r = p.wait()  # every child is waited for, whatever the first one's status
        rc = rc or r
    return rc


def per_rank(n, argv, make_env):
    procs = []
    for r in range(n):
        env = base_env()
        env.update(make_env(r))
        procs.append(popen(env, argv))
    return wait_all(procs)


def lightning(n, argv, wait=True):
    for k in CLEAN:
        os.environ.pop(k, None)
    os.environ.update(NODE_RANK="0", LOCAL_RANK="0", WORLD_SIZE=str(n))
    procs = []
    for local in range(1, n):
        env = dict(os.environ, LOCAL_RANK=str(local))
        procs.append(popen(env, argv + ["--init", "args"] + ([] if wait else
                                                              ["--teardown-ms", "1500"])))
    sys.path.insert(0, HERE)
    import train
    train.train(0, n, train.parse(argv + ["--init", "args"]))  # node 0, local rank 0
    return wait_all(procs) if wait else 0


def ray_worker(rank, n, argv):
    sys.path.insert(0, HERE)
    import train
    from torch.utils.data import DataLoader
    for _ in DataLoader(1):  # the worker is running (and recording) before Ray sets ranks
        pass
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(n), LOCAL_RANK=str(rank))
    train.train(rank, n, train.parse(argv + ["--init", "env"]))


def spawn(target, n, argv):
    sys.path.insert(0, HERE)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=target, args=(r, n, argv)) for r in range(n)]
    for p in procs:
        p.start()
    rc = 0
    for p in procs:
        p.join()
        rc = rc or p.exitcode
    return rc


def main():
    how, n, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    if how == "torchrun":
        return per_rank(n, argv + ["--init", "env"], lambda r: dict(
            RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(n)))
    if how == "lightning":
        return lightning(n, argv)
    if how == "fabric":
        return lightning(n, argv, wait=False)
    if how == "spawn":
        import train
        return spawn(train.spawned, n, argv + ["--init", "args"])
    if how == "ray":
        return spawn(ray_worker, n, argv)
    if how == "mpi":
        return per_rank(n, argv, lambda r: dict(
            OMPI_COMM_WORLD_RANK=str(r), OMPI_COMM_WORLD_SIZE=str(n),
            OMPI_COMM_WORLD_LOCAL_RANK=str(r), PMIX_RANK=str(r),
            TRAIN_RANK=str(r), TRAIN_WORLD=str(n)))
    if how == "slurm":
        return per_rank(n, argv, lambda r: dict(
            SLURM_PROCID=str(r), SLURM_NTASKS=str(n), SLURM_LOCALID=str(r),
            TRAIN_RANK=str(r), TRAIN_WORLD=str(n)))
    if how == "none":
        return per_rank(n, argv, lambda r: dict(TRAIN_RANK=str(r), TRAIN_WORLD=str(n)))
    sys.exit("launch.py: unknown launcher %r" % how)


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    sys.exit(main())
