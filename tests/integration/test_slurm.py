"""The Slurm path against a real single-node cluster (slurm/local-cluster.sh): train.sbatch with two
CPU processes (DDP over gloo), preemption -> checkpoint -> requeue -> resume, a two-point sweep through
Hydra's submitit launcher, the idempotent pipeline array, and a clean stop.

Needs root (the script installs Debian's slurm packages when missing and starts the daemons). The
cluster gets its own state folder and ports, so a cluster started by hand keeps running beside it.
"""

from __future__ import annotations

import csv
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

# A toy run: tiny backbone, few short points, one K; ~10-30 optimizer steps a second on a CPU.
TOY = ["experiment=forecast_l3", "data.batch_size=2", "data.eval_batch_size=4", "data.n_context=4",
       "data.max_length=384", "data.max_train_points=64", "data.max_eval_points=4", "data.ks=[1]",
       "backbone.hidden_size=32", "backbone.intermediate_size=64", "backbone.num_layers=1",
       "backbone.vocab_size=512", "trainer.log_every_n_steps=1", "trainer.max_epochs=-1",
       "trainer.check_val_every_n_epoch=1000", "test_after_fit=false"]
MAX_STEPS = 40
# The first attempt holds before this step until Slurm's signal has reached it (tests/support/slurm_gate.py):
# signalled after a fixed wait, a quick machine once finished all its steps first and the job failed.
HOLD_AT = 5
HOLD = ["+callbacks.hold._target_=slurm_gate.HoldForSignal"]


class Cluster:
    def __init__(self, repo: Path, state: Path, env: dict[str, str]):
        self.repo, self.state, self.env = repo, state, env

    def script(self, *args: str, timeout: float = 120) -> str:
        result = subprocess.run([str(self.repo / "slurm" / "local-cluster.sh"), *args], env=self.env,
                                capture_output=True, text=True, timeout=timeout, check=False)
        assert result.returncode == 0, f"local-cluster.sh {args}: {result.stderr[-3000:]}"
        return result.stdout

    def run(self, *cmd: str, timeout: float = 60, **kwargs) -> str:
        result = subprocess.run(cmd, env=kwargs.pop("env", self.env), capture_output=True, text=True,
                                timeout=timeout, cwd=kwargs.pop("cwd", self.repo), check=False, **kwargs)
        assert result.returncode == 0, f"{' '.join(cmd)}: {result.stdout[-2000:]}{result.stderr[-3000:]}"
        return result.stdout

    def sbatch(self, *args: str, env: dict[str, str] | None = None) -> str:
        return self.run("sbatch", "--parsable", *args, env=env or self.env).strip().split(";")[0]

    def job_state(self, job_id: str) -> tuple[str, int]:
        """(state, restarts) from the controller, e.g. ("RUNNING", 0)."""
        out = self.run("scontrol", "show", "job", job_id)
        return re.search(r"JobState=(\S+)", out).group(1), int(re.search(r"Restarts=(\d+)", out).group(1))

    def wait_until(self, predicate, timeout: float, what: str, poll: float = 1.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(poll)
        pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


def free_port_block(n: int) -> int:
    """A port p such that p..p+n-1 are free on 127.0.0.1 now."""
    for _ in range(200):
        base = random.randint(20000, 40000)
        try:
            for port in range(base, base + n):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise RuntimeError("no free block of ports")


@pytest.fixture(scope="module")
def cluster(repo_root):
    if os.geteuid() != 0:
        pytest.skip("the local Slurm cluster needs root (it installs packages and starts daemons)")
    if not shutil.which("slurmctld") and not shutil.which("apt-get"):
        pytest.skip("no slurm packages and no apt-get to install them")
    # Short path: munge and slurm put Unix sockets in it (108-byte limit).
    state = Path(tempfile.mkdtemp(prefix="egh-slurm-", dir="/tmp"))
    base = free_port_block(4)
    env = {**os.environ, "EGOHORIZON_SLURM_DIR": str(state), "EGOHORIZON_SLURM_PORT": str(base),
           "EGOHORIZON_SLURM_DB_PORT": str(base + 3), "SLURM_CONF": str(state / "etc" / "slurm.conf"),
           "PYTHONUNBUFFERED": "1"}
    env.pop("SLURM_JOB_ID", None)  # never inherit an outer job's identity
    env.pop("WANDB_SERVICE", None)  # nor this process's wandb-core (a test before may have started one)
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"  # egohorizon, the venv's python
    handle = Cluster(repo_root, state, env)
    handle.script("start", timeout=900)  # installing the packages takes ~30 s on a fresh machine
    yield handle
    handle.script("stop", timeout=180)
    shutil.rmtree(state, ignore_errors=True)


def job_env(cluster: Cluster, runs: Path) -> dict[str, str]:
    """The cluster's environment for a train job: its run root, this interpreter, the test callbacks."""
    support = str(cluster.repo / "tests" / "support")
    path = os.pathsep.join(p for p in (support, cluster.env.get("PYTHONPATH", "")) if p)
    return {**cluster.env, "EGOHORIZON_RUN_ROOT": str(runs), "EGOHORIZON_PYTHON": sys.executable, "PYTHONPATH": path}


def wait_for_hold(cluster: Cluster, log_file: Path, job: str, where: str, timeout: float = 300) -> None:
    from slurm_gate import HOLDING

    def holding() -> bool:
        return (log_file.read_text() if log_file.exists() else "").count(f"{HOLDING} {where}") >= 2  # both ranks

    cluster.wait_until(holding, timeout, f"both DDP ranks of job {job} to hold {where} for the signal")
    assert cluster.job_state(job)[0] == "RUNNING", log_file.read_text()[-3000:]


def read_metric_rows(path: Path, key: str) -> list[int]:
    with path.open() as f:
        return [int(row["step"]) for row in csv.DictReader(f) if row.get(key)]


def test_train_is_preempted_requeued_and_resumes_at_the_checkpointed_step(cluster, tmp_path):
    import torch

    runs = tmp_path / "runs"
    env = job_env(cluster, runs)
    # --time: a hung job is ended by Slurm instead of holding the test suite.
    # logger=default: CSV and W&B (offline), to see the resumed run continue the same W&B run.
    job = cluster.sbatch("--ntasks-per-node=2", "--cpus-per-task=1", "--time=10", f"--output={tmp_path}/train-%j.out",
                         "slurm/train.sbatch", *TOY, "logger=default", "strategy=ddp", f"trainer.max_steps={MAX_STEPS}",
                         "test_after_fit=true", *HOLD, f"+callbacks.hold.at_step={HOLD_AT}", "+callbacks.hold.in_test=true",
                         "+callbacks.hold.test_restart=1", env=env)
    log_file, run_dir = tmp_path / f"train-{job}.out", runs / job
    # Both ranks have logged steps 0 .. HOLD_AT - 1 and wait: training cannot finish before the signal.
    wait_for_hold(cluster, log_file, job, "at step")
    # What Slurm sends before the time limit (--signal=B:USR1@300), on demand.
    cluster.run("scancel", "--batch", "--signal=USR1", job)
    # The requeued attempt trains to the end and holds in its test pass: Slurm's warning again, now after
    # training, when there is nothing to checkpoint. Before issue 36 it killed the tasks (job FAILED).
    wait_for_hold(cluster, log_file, job, "in the test pass", timeout=500)
    cluster.run("scancel", "--batch", "--signal=USR1", job)

    cluster.wait_until(lambda: cluster.job_state(job) == ("COMPLETED", 1) or cluster.job_state(job)[0] in
                       ("FAILED", "CANCELLED", "TIMEOUT"), 500, f"job {job} to finish after its requeue", poll=3)
    log = log_file.read_text()
    assert cluster.job_state(job) == ("COMPLETED", 1), log[-4000:]
    assert log.count("[SlurmRequeue] SIGUSR1 after training ended: finishing what is left (test, outputs) "
                     "instead of requeuing") == 2, log[-4000:]  # one line per rank, and no second requeue
    assert json.loads((run_dir / "metrics.json").read_text())["global_step"] == MAX_STEPS  # tested, written
    assert "SIGUSR1: forwarding to the tasks" in log and "Slurm signal: saving" in log
    assert f"requeued Slurm job {job}" in log
    assert f"job {job} restart 1 on" in log  # the same job id came back, so the same run folder

    hpc = run_dir / "hpc_ckpt_1.ckpt"
    assert hpc.is_file(), sorted(p.name for p in run_dir.iterdir())
    # ckpt_path=auto resumes from the newest of hpc_ckpt_1.ckpt and the last.ckpt that Lightning
    # writes as the stopped fit ends (same step).
    restored = re.search(r"Restoring states from the checkpoint path at (\S+)", log)
    assert restored and Path(restored.group(1)).name in (hpc.name, "last.ckpt"), log[-4000:]
    resumed_at = torch.load(hpc, map_location="cpu", weights_only=False)["global_step"]
    assert resumed_at == HOLD_AT + 1  # the step in flight when the signal came, then the checkpoint
    final = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    assert final["global_step"] == MAX_STEPS
    # Lightning's CSVLogger starts metrics.csv afresh in a resumed run, so the file holds the second
    # attempt alone: one row per step from the checkpoint's on (a fresh start would begin at 0).
    steps = read_metric_rows(run_dir / "csv" / "metrics.csv", "train/loss")
    assert steps == list(range(resumed_at, MAX_STEPS))

    # One W&B run id, kept in the run folder, used by both attempts (offline: one folder per attempt).
    wandb_id = (run_dir / "wandb_id").read_text().strip()
    attempts = sorted(p.name for p in (run_dir / "wandb").glob("offline-run-*"))
    assert len(attempts) == 2 and all(name.endswith(f"-{wandb_id}") for name in attempts), (wandb_id, attempts)

    # eval.sbatch on the finished run, on its held-out points.
    evaluation = cluster.sbatch("--cpus-per-task=1", "--time=10", f"--output={tmp_path}/eval-%j.out", "slurm/eval.sbatch",
                                f"ckpt={run_dir}", f"points={run_dir}/points/points_test.jsonl", "embedder=exact",
                                "data.n_context=4", "data.max_length=384", env=env)
    cluster.wait_until(lambda: not cluster.run("squeue", "-h", "-j", evaluation).strip(), 300, "eval.sbatch to finish")
    report_file = runs / evaluation / "report.json"
    assert report_file.is_file(), (tmp_path / f"eval-{evaluation}.out").read_text()[-3000:]
    report = json.loads(report_file.read_text())
    assert report["n_points"] == 4 and report["reports"]["model"]["overall"]["n"] == 4


def test_two_point_sweep_runs_through_the_submitit_launcher(cluster, tmp_path):
    sweep = tmp_path / "sweep"
    out = cluster.run(sys.executable, "train.py", "-m", "hydra/launcher=slurm", f"hydra.sweep.dir={sweep}",
                      "hydra.launcher.cpus_per_task=1", "hydra.launcher.timeout_min=10", *TOY, "logger=csv",
                      "trainer.max_steps=3", "model.optimizer.lr=1e-3,2e-3", timeout=600)
    # submitit submits the points as one array job: .submitit/<array id>_<task>/ holds each one's logs.
    job_ids = sorted(p.name for p in (sweep / ".submitit").iterdir() if re.fullmatch(r"\d+_\d+", p.name))
    assert len(job_ids) == 2, out[-2000:]
    for num, lr in (("0", 1e-3), ("1", 2e-3)):
        config = (sweep / num / "config.yaml").read_text()
        assert f"lr: {lr}" in config
        assert '"global_step": 3' in (sweep / num / "metrics.json").read_text()
    # The launcher returns once submitit has the results; Slurm marks the jobs done a moment later.
    expected = [f"{j}|COMPLETED" for j in job_ids]

    def states() -> list[str]:
        return cluster.run("sacct", "-n", "-X", "-P", "-o", "JobID,State", "-j", ",".join(job_ids)).split()

    cluster.wait_until(lambda: states() == expected or any("FAIL" in s for s in states()), 120, "sacct: COMPLETED")
    assert states() == expected


def test_pipeline_array_covers_every_item_once_and_skips_done_ranges(cluster, tmp_path):
    script = str(cluster.repo / "slurm" / "pipeline-array.sbatch")
    command = ["--name", "numbers", "--items", "10", "--state", str(tmp_path / "state"), "--",
               "bash", "-c", f"seq {{start}} $(({{stop}} - 1)) > {tmp_path}/part-{{range}}.txt"]

    def finished(job: str) -> bool:
        return not cluster.run("squeue", "-h", "-j", job).strip()

    job = cluster.sbatch("--array=0-2", "--cpus-per-task=1", f"--output={tmp_path}/array-%A_%a.out", script, *command)
    cluster.wait_until(lambda: finished(job), 180, "the array to finish")
    numbers = sorted(int(n) for p in tmp_path.glob("part-*.txt") for n in p.read_text().split())
    assert numbers == list(range(10))
    assert len(list((tmp_path / "state" / "numbers").glob("range-*.done"))) == 3
    for part in tmp_path.glob("part-*.txt"):
        part.unlink()
    rerun = cluster.sbatch("--array=1", "--cpus-per-task=1", f"--output={tmp_path}/rerun-%A_%a.out", script,
                           "--ranges", "3", *command[:-3], "false")
    cluster.wait_until(lambda: finished(rerun), 120, "the rerun to finish")
    assert "done earlier" in (tmp_path / f"rerun-{rerun}_1.out").read_text()
    assert not list(tmp_path.glob("part-*.txt"))


def test_stop_leaves_nothing_running(cluster):
    pids = [int(line.split()[1]) for line in cluster.script("pids").splitlines()]
    assert len(pids) == 5  # munged, mariadbd, slurmdbd, slurmctld, slurmd
    cluster.script("stop", timeout=180)
    time.sleep(1)
    alive = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    assert not alive, f"still running: {alive}"
    marker = f"SLURM_CONF={cluster.env['SLURM_CONF']}".encode()
    leftovers = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                if marker in (proc / "environ").read_bytes():
                    leftovers.append((proc.name, (proc / "cmdline").read_bytes().replace(b"\0", b" ")[:120]))
            except OSError:
                continue
    assert not leftovers, f"processes of this cluster's jobs still running: {leftovers}"
