"""A private one-node Slurm cluster (Debian's slurm-wlm) for the launcher tests, and for people: ``make slurm-up``.

slurmctld and slurmd run from a config in a temporary folder: free private ports, no munge
(``AuthType=auth/none``, ``CredType=cred/none``), every state/spool/log/pid file in that folder, no cgroups
(``proctrack/linuxproc``, ``task/none``), ``select/cons_tres`` over one node with this machine's CPUs. Clients
(sbatch, squeue, the launcher and the jobs it submits) find it through ``SLURM_CONF``; nothing outside the folder
is touched, so it coexists with a real Slurm installation and with other test clusters on the same machine.

    python tests/launcher/slurm_cluster.py up --dir=/tmp/sf_slurm     # prints: export SLURM_CONF=...
    python tests/launcher/slurm_cluster.py down --dir=/tmp/sf_slurm
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/, when run as a script

from sf_run import free_ports  # noqa: E402

DAEMONS = ("slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "sinfo", "scancel")
PARTITION = "sftest"
START_TIMEOUT_S = 60.0
DRAIN_TIMEOUT_S = 60.0
POLL_S = 0.2
INSTALL_HINT = "`make test` installs it as root (apt-get install slurm-wlm)"


def unavailable_reason() -> str | None:
    """Why this machine cannot run the test cluster, or None when it can."""
    missing = [b for b in DAEMONS + CLIENTS if shutil.which(b) is None]
    if missing:
        return f"Slurm is not installed (missing {', '.join(missing)}): {INSTALL_HINT}"
    if os.geteuid() != 0:
        return "the test cluster's slurmd must run as root (it starts each job as its user): run the tests as root"
    return None


def slurm_conf(root: str, ctld_port: int, slurmd_port: int, cpus: int, host: str) -> str:
    return f"""\
ClusterName=sftest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
KillWait=5
MinJobAge=30
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName={PARTITION} Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


@dataclass
class SlurmCluster:
    """A running test cluster: pass ``env`` to every Slurm client (it carries ``SLURM_CONF``)."""

    root: str
    conf: str
    env: dict[str, str]
    daemons: list[subprocess.Popen] = field(default_factory=list)

    def run(self, *cmd: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(list(cmd), env=self.env, capture_output=True, text=True, timeout=timeout)

    def queued_jobs(self) -> list[str]:
        """``id name state`` of every job still pending or running."""
        result = self.run("squeue", "--noheader", "--format=%i %j %T")
        return [line.strip() for line in result.stdout.splitlines() if line.strip()]

    def log_tail(self, lines: int = 20) -> str:
        parts = []
        for daemon in DAEMONS:
            try:
                with open(os.path.join(self.root, f"{daemon}.log"), errors="replace") as f:
                    parts.append(f"--- {daemon}.log\n" + "\n".join(f.read().splitlines()[-lines:]))
            except OSError:
                parts.append(f"--- {daemon}.log missing")
        return "\n".join(parts)


def _node_state(cluster: SlurmCluster) -> str:
    result = cluster.run("sinfo", "--noheader", "--format=%T", f"--partition={PARTITION}", timeout=20)
    return result.stdout.strip() if result.returncode == 0 else ""


def _start_once(root: str, detach: bool) -> SlurmCluster:
    host = socket.gethostname().split(".")[0]
    ctld_port, slurmd_port = free_ports(2)
    for sub in ("state", "spool"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    conf = os.path.join(root, "slurm.conf")
    with open(conf, "w") as f:
        f.write(slurm_conf(root, ctld_port, slurmd_port, os.cpu_count() or 1, host))
    env = dict(os.environ, SLURM_CONF=conf)
    cluster = SlurmCluster(root, conf, env)
    for daemon in DAEMONS:
        out = open(os.path.join(root, f"{daemon}.stdout"), "ab")
        # -D: stay in the foreground so that this process owns (and later reaps) the daemon
        cluster.daemons.append(
            subprocess.Popen([daemon, "-D", "-f", conf], env=env, stdout=out, stderr=out, start_new_session=detach)
        )
        out.close()
    with open(os.path.join(root, "daemons.pid"), "w") as f:
        f.write(" ".join(str(p.pid) for p in cluster.daemons))
    return cluster


def start(root: str, detach: bool = False, attempts: int = 3) -> SlurmCluster:
    """Start both daemons and return once the node is idle; retry on fresh ports if a port was taken."""
    last_error = ""
    for _ in range(attempts):
        cluster = _start_once(root, detach)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in cluster.daemons):
                break
            if _node_state(cluster) == "idle":
                return cluster
            time.sleep(POLL_S)
        last_error = cluster.log_tail()
        stop(cluster)
    raise RuntimeError(f"the test Slurm cluster in {root} did not become idle:\n{last_error}")


def cancel_all_jobs(cluster: SlurmCluster) -> list[str]:
    """Cancel every job and wait until the queue is empty; returns the jobs that were still there."""
    leftover = cluster.queued_jobs()
    if leftover:
        cluster.run("scancel", f"--partition={PARTITION}")
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while cluster.queued_jobs() and time.monotonic() < deadline:
        time.sleep(POLL_S)
    return leftover


def stop(cluster: SlurmCluster) -> None:
    """Cancel the jobs, then stop slurmd and slurmctld and reap them."""
    if all(p.poll() is None for p in cluster.daemons):
        cancel_all_jobs(cluster)
    for p in reversed(cluster.daemons):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in cluster.daemons:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _stop_detached(root: str) -> None:
    """``down``: the daemons of an ``up`` in another process (not our children: signal them by their recorded pid)."""
    with open(os.path.join(root, "daemons.pid")) as f:
        pids = [int(p) for p in f.read().split()]
    cluster = SlurmCluster(root, os.path.join(root, "slurm.conf"), dict(os.environ, SLURM_CONF=f"{root}/slurm.conf"))
    cancel_all_jobs(cluster)
    for pid in reversed(pids):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    os.remove(os.path.join(root, "daemons.pid"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A private one-node Slurm cluster for trying the launcher.")
    parser.add_argument("action", choices=["up", "down"])
    parser.add_argument("--dir", default="/tmp/sf_slurm", help="Folder for the config, state, spool and logs.")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.dir)
    if args.action == "down":
        _stop_detached(root)
        print(f"stopped the test cluster in {root}")
        return 0
    reason = unavailable_reason()
    if reason:
        print(f"cannot start a test cluster: {reason}", file=sys.stderr)
        return 1
    cluster = start(root, detach=True)
    print(
        f"test cluster up (partition {PARTITION}, {os.cpu_count()} CPUs); use it with:\n"
        f"  export SLURM_CONF={cluster.conf}\nstop it with: make slurm-down"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
