#!/usr/bin/env bash
# The classpath of Iceberg's REST Compatibility Kit (tests/rck/pom.xml), resolved from
# Maven Central by mvn into .rck/classpath.txt; a no-op when present.
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$HERE/.rck/classpath.txt"
if [ -s "$OUT" ] && [ "$OUT" -nt "$HERE/tests/rck/pom.xml" ]; then
  exit 0
fi
mkdir -p "$HERE/.rck"
mvn -q -f "$HERE/tests/rck/pom.xml" dependency:build-classpath -Dmdep.outputFile="$OUT.part"
mv "$OUT.part" "$OUT"
echo "rck: $OUT"
