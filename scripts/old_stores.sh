#!/usr/bin/env bash
# Make the state-store fixtures of tests/test_upgrades.py: for each commit given, the
# sparkmark of that commit runs its own `make demo` (two bookmarked runs with new files
# between them, and from later commits a crawl, a catalog job and a workflow) against a
# store of its own, and the store is kept:
#   tests/fixtures/stores/<name>.sqlite     the SQLite file
#   tests/fixtures/stores/<name>.pgsql      a plain pg_dump of the same demo on PostgreSQL
# Usage: scripts/old_stores.sh NAME=COMMIT [NAME=COMMIT ...]   (PG_URL for PostgreSQL)
# The old code runs with this checkout's virtualenv, its own src/ first on the path.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${VENV:-$here/.venv}
out=$here/tests/fixtures/stores
pg_admin=${PG_ADMIN:-postgresql://postgres@127.0.0.1:5432/postgres}
mkdir -p "$out"
for pair in "$@"; do
  name=${pair%%=*}; commit=${pair#*=}
  for backend in sqlite postgresql; do
    work=$(mktemp -d /tmp/old-store-XXXX)
    git -C "$here" worktree add -q --detach "$work/tree" "$commit"
    if [ "$backend" = sqlite ]; then
      url="sqlite:///$work/state.db"
    else
      db="old_${name//[^a-z0-9]/_}"
      psql -q "$pg_admin" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
      url="postgresql+psycopg://postgres@127.0.0.1:5432/$db"
    fi
    (
      cd "$work/tree"
      export PYTHONPATH="$work/tree/src" SPARKMARK_HOME="$work/home" SPARKMARK_STATE_URL="$url"
      make -o install -o "$venv/.installed" demo VENV="$venv" > "$work/demo.log" 2>&1 \
        || { tail -30 "$work/demo.log"; exit 1; }
      if [ -f "$here/tests/fixtures/stores/services.py" ]; then
        "$venv/bin/python" "$here/tests/fixtures/stores/services.py" "$url" >> "$work/demo.log" 2>&1 \
          || { tail -30 "$work/demo.log"; exit 1; }
      fi
    )
    if [ "$backend" = sqlite ]; then
      "$venv/bin/python" -c "import sqlite3,sys; s=sqlite3.connect(sys.argv[1]); d=sqlite3.connect(sys.argv[2]); s.backup(d)" \
        "$work/state.db" "$out/$name.sqlite"
    else
      pg_dump --no-owner --no-privileges "postgresql://postgres@127.0.0.1:5432/$db" > "$out/$name.pgsql"
      psql -q "$pg_admin" -c "DROP DATABASE $db"
    fi
    git -C "$here" worktree remove --force "$work/tree"
    rm -rf "$work"
    echo "made $name ($backend) from $commit"
  done
done
