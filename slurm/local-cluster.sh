#!/usr/bin/env bash
# A single-node Slurm cluster on 127.0.0.1, for trying slurm/*.sbatch and the submitit sweeps on one
# machine (tests/test_slurm*.py use it). Debian's slurm 22.05 packages; needs root.
#
#   slurm/local-cluster.sh start    install the packages if missing, start munged, MariaDB, slurmdbd,
#                                   slurmctld and slurmd; print the line to eval for the client commands
#   slurm/local-cluster.sh env      print `export SLURM_CONF=...` (use: eval "$(slurm/local-cluster.sh env)")
#   slurm/local-cluster.sh status   which daemons run, sinfo and squeue
#   slurm/local-cluster.sh stop     cancel the jobs, stop only the daemons this script started (pid files)
#   slurm/local-cluster.sh purge    stop, then delete the state folder (job ids restart at 1)
#
# All state (configs, munge key, database, spool, logs, pid files) lives under one folder,
# $EGOHORIZON_SLURM_DIR (default /tmp/egohorizon-slurm): keep the path short, munge and slurm use
# Unix sockets there (108-byte limit). Ports: $EGOHORIZON_SLURM_PORT (default 16817) and the next
# two for slurmd and slurmdbd; MariaDB on $EGOHORIZON_SLURM_DB_PORT (default 16306), 127.0.0.1 only.
#
# Why it looks like this (established on Debian 12, see issue 6):
# - the packages' services need systemd, which a container lacks: the daemons are started here as root;
# - NodeAddr/SlurmctldHost on 127.0.0.1 avoid DNS; the node line comes from `slurmd -C` with
#   RealMemory at ~90% so the node never drains for "low RealMemory";
# - proctrack/linuxproc + task/none + cons_tres/CR_Core need no cgroups;
# - a private munged needs AuthInfo=socket=..., and with slurmdbd AccountingStoragePass=<that socket>,
#   else slurmctld fails with "we have no TRES from it";
# - cred_expire=10 and sched_interval=2,bf_interval=2: a requeued job starts again in ~12 s, not ~150 s;
# - submitit reads job states from sacct, hence accounting (MariaDB + slurmdbd).
set -euo pipefail

STATE="${EGOHORIZON_SLURM_DIR:-/tmp/egohorizon-slurm}"
PORT="${EGOHORIZON_SLURM_PORT:-16817}"
DB_PORT="${EGOHORIZON_SLURM_DB_PORT:-16306}"
CLUSTER=egohorizon
PARTITION=local
HOST="$(hostname -s)"
CONF="$STATE/etc/slurm.conf"
RUN="$STATE/run"
LOG="$STATE/log"
MUNGE_SOCKET="$RUN/munge.sock"
PACKAGES=(slurmctld slurmd slurm-client munge slurmdbd mariadb-server)
# Daemons in start order; stop goes the other way.
DAEMONS=(munged mariadbd slurmdbd slurmctld slurmd)

say() { echo "local-cluster: $*" >&2; }
die() { say "error: $*"; exit 1; }

need_root() {
  [ "$(id -u)" = 0 ] || die "needs root (it starts munged, MariaDB and the slurm daemons as root)"
}

install_packages() {
  local missing=()
  for cmd in slurmctld slurmd sbatch munged slurmdbd mariadbd; do
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null 2>&1 || die "missing ${missing[*]} and no apt-get to install ${PACKAGES[*]}"
  say "installing ${PACKAGES[*]} (missing: ${missing[*]})"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  # The packages' postinst scripts try to start services through systemd; there is none here, so
  # they do nothing and we start the daemons ourselves below.
  apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null
}

pid_of() {  # the pid from a daemon's pid file, if that process is alive
  local file="$RUN/$1.pid" pid
  [ -s "$file" ] || return 1
  pid="$(tr -dc 0-9 <"$file")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: poll once a second until COMMAND succeeds
  local seconds="$1" what="$2"; shift 2
  for _ in $(seq "$seconds"); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 1
  done
  die "$what did not come up within ${seconds}s (logs: $LOG)"
}

make_dirs() {
  mkdir -p "$STATE"/{etc,run,log,munge,mysql,spool/ctld,spool/d}
  chmod 700 "$STATE/munge" "$STATE/etc"
  [ -s "$STATE/munge/munge.key" ] || mungekey --create --keyfile="$STATE/munge/munge.key" >/dev/null
  chmod 400 "$STATE/munge/munge.key"
  [ -s "$STATE/etc/db.pass" ] || (umask 077; head -c 18 /dev/urandom | base64 | tr -dc A-Za-z0-9 >"$STATE/etc/db.pass")
}

start_munged() {
  pid_of munged >/dev/null && return 0
  # --force: munged refuses to run as root or with a key under /tmp otherwise; this is a private,
  # loopback-only test daemon.
  munged --force --socket="$MUNGE_SOCKET" --key-file="$STATE/munge/munge.key" \
    --pid-file="$RUN/munged.pid" --log-file="$LOG/munged.log" --seed-file="$STATE/munge/munged.seed"
  wait_for 20 munged test -S "$MUNGE_SOCKET"
}

start_mariadb() {
  pid_of mariadbd >/dev/null && return 0
  if [ ! -d "$STATE/mysql/mysql" ]; then
    mariadb-install-db --user=root --datadir="$STATE/mysql" --auth-root-authentication-method=socket \
      --skip-test-db >"$LOG/mariadb-install.log" 2>&1 || die "mariadb-install-db failed: $LOG/mariadb-install.log"
  fi
  # setsid: the server must outlive this script and the shell that ran it.
  setsid mariadbd --user=root --datadir="$STATE/mysql" --socket="$RUN/mysql.sock" \
    --pid-file="$RUN/mariadbd.pid" --port="$DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve \
    --innodb-buffer-pool-size=64M --innodb-lock-wait-timeout=900 --log-error="$LOG/mariadb.log" \
    </dev/null >/dev/null 2>&1 &
  wait_for 60 MariaDB mariadb --socket="$RUN/mysql.sock" -uroot -e "SELECT 1"
  wait_for 10 "MariaDB pid file" pid_of mariadbd
  local pass; pass="$(cat "$STATE/etc/db.pass")"
  mariadb --socket="$RUN/mysql.sock" -uroot -e "
    CREATE DATABASE IF NOT EXISTS slurm_acct_db;
    CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$pass';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
}

write_configs() {
  local node_line mem
  # `slurmd -C` prints the node's real layout; RealMemory at 90% so the node never drains.
  node_line="$(slurmd -C | head -n1)"
  mem="$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$node_line")"
  node_line="$(sed "s/RealMemory=[0-9]*/RealMemory=$((mem * 9 / 10))/; s/NodeName=[^ ]*/NodeName=$HOST NodeAddr=127.0.0.1/" <<<"$node_line")"
  cat >"$CONF" <<EOF
# Written by slurm/local-cluster.sh; regenerated on every start.
ClusterName=$CLUSTER
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET,cred_expire=10
CredType=cred/munge
StateSaveLocation=$STATE/spool/ctld
SlurmdSpoolDir=$STATE/spool/d
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=2
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
KillWait=5
InactiveLimit=0
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$((PORT + 2))
AccountingStoragePass=$MUNGE_SOCKET
$node_line State=UNKNOWN
PartitionName=$PARTITION Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
  (umask 077; cat >"$STATE/etc/slurmdbd.conf" <<EOF
# Written by slurm/local-cluster.sh; regenerated on every start.
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
DbdHost=$HOST
DbdAddr=127.0.0.1
DbdPort=$((PORT + 2))
SlurmUser=root
PidFile=$RUN/slurmdbd.pid
LogFile=$LOG/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$(cat "$STATE/etc/db.pass")
StorageLoc=slurm_acct_db
EOF
  )
}

start_slurm_daemons() {
  export SLURM_CONF="$CONF"
  # slurmdbd reads slurmdbd.conf from the folder of $SLURM_CONF.
  pid_of slurmdbd >/dev/null || slurmdbd
  wait_for 60 slurmdbd sacctmgr -n list cluster
  # The cluster must exist in the database before slurmctld registers, or it has no TRES.
  sacctmgr -n list cluster format=cluster | grep -qw "$CLUSTER" || sacctmgr -i add cluster "$CLUSTER" >/dev/null
  pid_of slurmctld >/dev/null || slurmctld
  wait_for 60 slurmctld scontrol ping
  pid_of slurmd >/dev/null || slurmd
  wait_for 60 "node $HOST" node_ready
}

node_ready() {
  local state; state="$(sinfo -h -n "$HOST" -o %T 2>/dev/null)"
  case "$state" in idle*|mixed*|allocated*) return 0 ;; *) return 1 ;; esac
}

cmd_start() {
  need_root
  install_packages
  make_dirs
  start_munged
  start_mariadb
  write_configs
  start_slurm_daemons
  say "running: $(cmd_pids | tr '\n' ' ')"
  say "state in $STATE; for the client commands run: eval \"\$($0 env)\""
  cmd_env
}

cmd_env() { echo "export SLURM_CONF=$CONF"; }

cmd_pids() {  # one "name pid" line per daemon that is running
  for daemon in "${DAEMONS[@]}"; do
    local pid
    pid="$(pid_of "$daemon")" && echo "$daemon $pid"
  done
  return 0
}

cmd_status() {
  local any=0
  for daemon in "${DAEMONS[@]}"; do
    if pid="$(pid_of "$daemon")"; then echo "$daemon: running (pid $pid)"; any=1
    else echo "$daemon: not running"; fi
  done
  if pid_of slurmctld >/dev/null; then
    export SLURM_CONF="$CONF"
    sinfo || true
    squeue || true
  fi
  [ "$any" = 1 ]
}

cancel_jobs() {
  pid_of slurmctld >/dev/null || return 0
  export SLURM_CONF="$CONF"
  scancel --full --partition="$PARTITION" 2>/dev/null || true
  # Give the steps time to end: their slurmstepd processes are children of no daemon of ours.
  for _ in $(seq 30); do
    [ -z "$(squeue -h -o %i 2>/dev/null)" ] && return 0
    sleep 1
  done
  say "warning: jobs still listed after 30 s: $(squeue -h -o '%i %T' | tr '\n' ' ')"
}

stop_daemon() {
  local daemon="$1" pid
  pid="$(pid_of "$daemon")" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 30); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$RUN/$daemon.pid"; return 0; }
    sleep 1
  done
  say "$daemon (pid $pid) ignored SIGTERM for 30 s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$RUN/$daemon.pid"
}

cmd_stop() {
  need_root
  cancel_jobs
  for ((i = ${#DAEMONS[@]} - 1; i >= 0; i--)); do stop_daemon "${DAEMONS[$i]}"; done
  say "stopped"
}

cmd_purge() {
  cmd_stop
  case "$STATE" in /|"") die "refusing to delete '$STATE'" ;; esac
  rm -rf "$STATE"
  say "deleted $STATE"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  env) cmd_env ;;
  pids) cmd_pids ;;
  purge) cmd_purge ;;
  *) echo "usage: $0 start|stop|status|env|pids|purge" >&2; exit 2 ;;
esac
