#!/usr/bin/env bash
# kernel-bakeoff as a service: every command of the README's "Running as a service", in order.
#
#   deployments/service.sh database        PostgreSQL role + database for the server (once)
#   deployments/service.sh server          the Prefect server, on 127.0.0.1:4200 by default
#   deployments/service.sh deploy          work pools, deployments, the crash and cancel automations
#   deployments/service.sh worker POOL [default|lanes] [LIMIT]     one worker (per pool, queue)
#
# Works as root and as an ordinary user, with or without the virtual environment activated
# (it uses .venv/bin/prefect when there is one). Settings, all optional:
#   PGHOST, PGPORT            where PostgreSQL listens (default: Debian's local socket, 5432)
#   BAKEOFF_DB_PASSWORD       the `prefect` role's password (default: generated once, kept in
#                             $BAKEOFF_SERVICE_DIR/db.env, mode 600, with the API's login
#                             BAKEOFF_API_AUTH_STRING, which the server always requires and
#                             `deploy`/`worker` send: PREFECT_SERVER_API_AUTH_STRING and
#                             PREFECT_API_AUTH_STRING override it)
#   BAKEOFF_SERVER_HOST/PORT  the server's interface and port (127.0.0.1, 4200). Any other
#                             interface needs PREFECT_SERVER_API_AUTH_STRING=user:password
#                             (clients then set PREFECT_API_AUTH_STRING to the same value).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -x .venv/bin/prefect ]]; then PREFECT=.venv/bin/prefect PYTHON=.venv/bin/python
else PREFECT=$(command -v prefect) PYTHON=$(command -v python3); fi
STATE=${BAKEOFF_SERVICE_DIR:-${HOME:-/tmp}/.config/kernel-bakeoff}
HOST=${BAKEOFF_SERVER_HOST:-127.0.0.1}
PORT=${BAKEOFF_SERVER_PORT:-4200}
export PREFECT_SERVER_ANALYTICS_ENABLED=false

die() { echo "service.sh: $*" >&2; exit 2; }

as_postgres() {  # PostgreSQL's administrator is the `postgres` user, reached through its socket
  local args=(-U postgres)
  [[ -n ${PGHOST:-} ]] && args+=(-h "$PGHOST")
  [[ -n ${PGPORT:-} ]] && args+=(-p "$PGPORT")
  if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@" "${args[@]}"
  elif [[ $(id -un) == postgres ]]; then "$@" "${args[@]}"
  elif command -v sudo >/dev/null; then sudo -u postgres "$@" "${args[@]}"
  else die "run 'database' as root or as the postgres user (it creates a role)"; fi
}

database() {
  as_postgres true  # root, postgres or sudo to it, or it stops here, before db.env is written
  local socket=${PGHOST:-/var/run/postgresql}/.s.PGSQL.${PGPORT:-5432}
  [[ $socket != /* || -S $socket ]] ||
    die "PostgreSQL is not running (no $socket): start its cluster (Debian: pg_ctlcluster 15 main start, or service postgresql start)"
  local exists
  exists=$(as_postgres psql -d postgres -tAc "SELECT 1 FROM pg_roles WHERE rolname = 'prefect'")
  mkdir -p "$STATE" && chmod 700 "$STATE"
  if [[ ! -s $STATE/db.env ]]; then
    local password=${BAKEOFF_DB_PASSWORD:-$("$PYTHON" -c 'import secrets; print(secrets.token_hex(16))')}
    (umask 077 && printf 'BAKEOFF_DB_PASSWORD=%s\n' "$password" > "$STATE/db.env")
  fi
  if ! grep -q '^BAKEOFF_API_AUTH_STRING=' "$STATE/db.env"; then  # the API's login, once
    local auth
    auth=bakeoff:$("$PYTHON" -c 'import secrets; print(secrets.token_hex(16))')
    (umask 077 && printf 'BAKEOFF_API_AUTH_STRING=%s\n' "$auth" >> "$STATE/db.env")
  fi
  # shellcheck disable=SC1091
  source "$STATE/db.env"
  local verb=CREATE; [[ $exists == 1 ]] && verb=ALTER
  as_postgres psql -d postgres -v ON_ERROR_STOP=1 -qc \
    "$verb ROLE prefect LOGIN PASSWORD '$BAKEOFF_DB_PASSWORD'"
  if [[ -z $(as_postgres psql -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'prefect'") ]]; then
    as_postgres createdb -O prefect prefect
  fi
  # An existing database (made by hand, or by an older README) becomes the role's, schema too.
  as_postgres psql -d prefect -v ON_ERROR_STOP=1 -qc \
    "ALTER DATABASE prefect OWNER TO prefect; ALTER SCHEMA public OWNER TO prefect"
  echo "database prefect (owner prefect) ready; its password is in $STATE/db.env"
}

server() {
  [[ -s $STATE/db.env ]] || die "no $STATE/db.env: run 'deployments/service.sh database' first"
  # shellcheck disable=SC1091
  source "$STATE/db.env"
  # The API requires its login, on loopback too: any local process (a candidate's, were it
  # out of its box) could otherwise change runs and register flows that workers run.
  : "${PREFECT_SERVER_API_AUTH_STRING:=${BAKEOFF_API_AUTH_STRING:-}}"
  [[ -n $PREFECT_SERVER_API_AUTH_STRING ]] && export PREFECT_SERVER_API_AUTH_STRING
  if [[ $HOST != 127.0.0.1 && $HOST != localhost && -z ${PREFECT_SERVER_API_AUTH_STRING:-} ]]; then
    die "a server on $HOST is reachable from other hosts: set PREFECT_SERVER_API_AUTH_STRING=user:password (clients: PREFECT_API_AUTH_STRING)"
  fi
  export PREFECT_API_DATABASE_CONNECTION_URL="postgresql+asyncpg://prefect:$BAKEOFF_DB_PASSWORD@${PGHOST_TCP:-127.0.0.1}:${PGPORT:-5432}/prefect"
  exec "$PREFECT" server start --host "$HOST" --port "$PORT"
}

api() {  # clients: the server's address and its login (db.env, where this user can read it)
  : "${PREFECT_API_URL:=http://$HOST:$PORT/api}"; export PREFECT_API_URL
  if [[ -z ${PREFECT_API_AUTH_STRING:-} && -r $STATE/db.env ]]; then
    PREFECT_API_AUTH_STRING=$(sed -n 's/^BAKEOFF_API_AUTH_STRING=//p' "$STATE/db.env")
    [[ -n $PREFECT_API_AUTH_STRING ]] && export PREFECT_API_AUTH_STRING
  fi
  return 0
}

deploy() {
  api
  "$PYTHON" -m deployments.pools
  "$PREFECT" --no-prompt deploy --all
  local name missing=0 names="bakeoff-crash-silent-runs bakeoff-cancel-silent-runs"
  for name in $names; do
    "$PREFECT" automation inspect "$name" -o json >/dev/null 2>&1 || missing=1
  done
  if ((missing)); then  # the file makes them all: none twice
    for name in $names; do
      "$PREFECT" --no-prompt automation delete "$name" >/dev/null 2>&1 || true
    done
    "$PREFECT" automation create --from-file deployments/automations.yaml
  fi
}

worker() {
  local pool=${1:-} queue=${2:-default} limit=${3:-}
  case $pool in gpu-mi300 | gpu-h200 | cpu-local) ;; *) die "worker POOL: gpu-mi300, gpu-h200 or cpu-local" ;; esac
  case $queue in default | lanes) ;; *) die "worker QUEUE: default (whole bake-offs) or lanes" ;; esac
  if [[ -z $limit ]]; then  # whole bake-offs one at a time; lanes: one per device of this host
    limit=1
    if [[ $queue == lanes ]]; then
      case $pool in
        gpu-h200) limit=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU') ||
          die "worker gpu-h200 lanes: no nvidia-smi, or it lists no GPU, on this host; give LIMIT as the third argument" ;;
        gpu-mi300) limit=$(find /dev/dri -name 'renderD*' 2>/dev/null | grep -c .) ||
          die "worker gpu-mi300 lanes: no /dev/dri/renderD* on this host; give LIMIT as the third argument" ;;
        cpu-local) limit=${BAKEOFF_CPU_SLOTS:-1} ;;
      esac
      [[ $limit -ge 1 ]] || limit=1
    fi
  fi
  api
  export PREFECT_FLOWS_HEARTBEAT_FREQUENCY=${PREFECT_FLOWS_HEARTBEAT_FREQUENCY:-30}
  "$PREFECT" worker start --pool "$pool" --work-queue "$queue" --limit "$limit" "${@:4}" &
  WORKER=$!
  trap stop_worker TERM INT
  while kill -0 "$WORKER" 2>/dev/null; do wait "$WORKER" || true; done
}

# SIGTERM (a plain `kill`) or Ctrl-C: the flow runs this worker started get SIGTERM first, so
# each marks itself Crashed and exits (a re-run resumes it), then the worker stops. Prefect's
# own worker would stop and leave them running unsupervised.
stop_worker() {
  local runs child i
  # A process of the glob may exit before it is read: cat reads on past it (awk would stop),
  # and || true keeps set -e from ending this handler there, the worker left running.
  runs=$(cat /proc/[0-9]*/stat 2>/dev/null | awk -v p="$WORKER" '$4 == p {print $1}') || true
  for child in $runs; do kill -TERM "$child" 2>/dev/null || true; done
  for i in $(seq 20); do  # up to 10 s to record Crashed and exit, then they are killed
    local alive=""
    for child in $runs; do kill -0 "$child" 2>/dev/null && alive=1; done
    [[ -z $alive ]] && break
    sleep 0.5
  done
  for child in $runs; do kill -KILL "$child" 2>/dev/null || true; done
  kill -INT "$WORKER" 2>/dev/null || true
  (sleep 15 && kill -KILL "$WORKER" 2>/dev/null) &
}

case ${1:-} in
  database | server | deploy) "$1" ;;
  worker) shift; worker "$@" ;;
  *) sed -n '2,8p' "$0" >&2; exit 2 ;;
esac
