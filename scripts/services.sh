#!/usr/bin/env bash
# The database servers the tests use, installed and started by the project itself
# (`make services`). On a Debian machine, as root:
#   PostgreSQL on 127.0.0.1:5432, database `test`, user postgres, trust auth on loopback;
#   MariaDB    on 127.0.0.1:3306, database `test`, user root, empty password.
# Packages come from Debian and are installed only when missing. A second call on a
# machine where both answer and have their `test` database does nothing.
# A server that does not start prints one line naming it and its log, and the script
# exits non-zero.
set -uo pipefail

PG_PORT=5432
MY_PORT=3306
LOG_DIR=/var/log/sparkmark-services
MY_LOG="$LOG_DIR/mariadb.log"

quiet() { "$@" >/dev/null 2>&1; }
say() { echo "services: $*"; }
die() { echo "services: $*" >&2; exit 1; }

pg_up() { quiet pg_isready -h 127.0.0.1 -p "$PG_PORT" -q; }
pg_has_test() {
  [ "$(psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -tAc \
        "SELECT 1 FROM pg_database WHERE datname = 'test'" 2>/dev/null)" = 1 ]
}
my_up() { quiet mariadb-admin -h 127.0.0.1 -P "$MY_PORT" -uroot --connect-timeout=2 ping; }
my_has_test() { quiet mariadb -h 127.0.0.1 -P "$MY_PORT" -uroot -e "USE test"; }

# Fast path: everything is already there.
if command -v pg_isready >/dev/null && command -v mariadb-admin >/dev/null \
    && command -v promtool >/dev/null && pg_up && pg_has_test && my_up && my_has_test; then
  exit 0
fi

[ "$(id -u)" = 0 ] || die "installing and starting the database servers needs root (run as root, or start PostgreSQL on :$PG_PORT and MariaDB on :$MY_PORT yourself)"

# ------------------------------------------------------------------ packages
missing=()
compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null || missing+=(postgresql)
command -v pg_isready >/dev/null || missing+=(postgresql-client)
[ -x /usr/sbin/mariadbd ] || missing+=(mariadb-server)
command -v mariadb-admin >/dev/null || missing+=(mariadb-client)
# Prometheus's server and promtool: the tests scrape sparkmark with the real server and
# unit-test the shipped alerting rules with promtool. Not started here: a test starts
# its own server with its own configuration.
command -v promtool >/dev/null || missing+=(prometheus)
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing ${missing[*]} from Debian's packages"
  # Package scripts must not try to start services through an init system that is
  # not there; this script starts them itself below.
  policy=/usr/sbin/policy-rc.d
  made_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made_policy=1
  fi
  quiet apt-get update -qq || die "apt-get update failed: Debian's package lists cannot be read"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    > "/tmp/sparkmark-services-apt.log" 2>&1 \
    || { [ "$made_policy" = 1 ] && rm -f "$policy"; die "apt-get install ${missing[*]} failed: see /tmp/sparkmark-services-apt.log"; }
  [ "$made_policy" = 1 ] && rm -f "$policy"
fi
mkdir -p "$LOG_DIR"

# ------------------------------------------------------------------ PostgreSQL
if ! pg_up; then
  version=$(ls /usr/lib/postgresql | sort -V | tail -1)
  if [ ! -d "/etc/postgresql/$version/main" ]; then
    quiet pg_createcluster "$version" main || die "PostgreSQL: pg_createcluster $version main failed"
  fi
  conf="/etc/postgresql/$version/main"
  hba="$conf/pg_hba.conf"
  # Trust on loopback, ahead of Debian's password rules: the tests connect as postgres
  # without a password. Only 127.0.0.1 and ::1 are trusted; the server listens nowhere else.
  if ! grep -q "sparkmark-services" "$hba"; then
    { echo "# sparkmark-services: trust on loopback for the tests"
      echo "host all all 127.0.0.1/32 trust"
      echo "host all all ::1/128 trust"
      cat "$hba"; } > "$hba.new" && mv "$hba.new" "$hba"
    chown postgres:postgres "$hba"
  fi
  pg_log="/var/log/postgresql/postgresql-$version-main.log"
  quiet pg_ctlcluster --skip-systemctl-redirect "$version" main start \
    -o "-c listen_addresses=127.0.0.1 -c port=$PG_PORT"
  for _ in $(seq 1 60); do pg_up && break; sleep 0.5; done
  pg_up || die "PostgreSQL did not start on 127.0.0.1:$PG_PORT; its log is $pg_log"
fi
if ! pg_has_test; then
  psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -qc "CREATE DATABASE test" >/dev/null \
    || die "PostgreSQL answers on 127.0.0.1:$PG_PORT but CREATE DATABASE test failed (is loopback trusted for user postgres?)"
fi

# ------------------------------------------------------------------ MariaDB
if ! my_up; then
  datadir=/var/lib/mysql
  if [ ! -d "$datadir/mysql" ]; then
    quiet mariadb-install-db --user=mysql --datadir="$datadir" --auth-root-authentication-method=normal \
      || die "MariaDB: mariadb-install-db failed for $datadir"
  fi
  install -d -o mysql -g mysql /run/mysqld
  touch "$MY_LOG" && chown mysql:mysql "$MY_LOG"
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- \
    --user=mysql --datadir="$datadir" --bind-address=127.0.0.1 --port="$MY_PORT" \
    --log-error="$MY_LOG" >/dev/null 2>&1
  for _ in $(seq 1 60); do my_up && break; sleep 0.5; done
  my_up || die "MariaDB did not start on 127.0.0.1:$MY_PORT; its log is $MY_LOG"
fi
if ! my_has_test; then
  # Debian's root@localhost authenticates by Unix socket only: over the socket, let it
  # in over TCP with an empty password too, and make the database.
  quiet mariadb -uroot -e "ALTER USER root@localhost IDENTIFIED VIA mysql_native_password USING PASSWORD('') OR unix_socket; CREATE DATABASE IF NOT EXISTS test"
  my_has_test || die "MariaDB answers on 127.0.0.1:$MY_PORT but root cannot use database test over TCP; its log is $MY_LOG"
fi
say "PostgreSQL on 127.0.0.1:$PG_PORT and MariaDB on 127.0.0.1:$MY_PORT, database test on both"
