#!/usr/bin/env bash
# `make jars`: resolve the Maven project in jars/ from Maven Central into Maven's local
# repository and write one classpath file per module into the jars folder
# (SPARKMARK_JARS_DIR, default $XDG_CACHE_HOME/sparkmark/jars or ~/.cache/sparkmark/jars).
# A second call with every classpath file newer than the poms, and every jar it names
# still present, does nothing.
#
# `scripts/jars.sh PYTHON` does the same for the runtime whose interpreter is PYTHON (a
# Glue 5.x runtime, `sparkmark runtime add`): its Spark, Scala, Hadoop, Iceberg and Delta
# versions, into the folder its sessions read (connectors.listing_dir), without the
# Kafka broker (the tests' broker is the one above).
set -uo pipefail
runtime="${1:-}"
[ -z "$runtime" ] || runtime="$(cd "$(dirname "$runtime")" && pwd)/$(basename "$runtime")"  # not realpath: a venv's python is a link
cd "$(dirname "$0")/../jars"
dir="${SPARKMARK_JARS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sparkmark/jars}"
modules=$(sed -n 's|.*<module>\(.*\)</module>.*|\1|p' pom.xml)
overrides=()
only=()
if [ -n "$runtime" ]; then
  read -r spark hadoop scala line iceberg delta folder < <("$runtime" - "$dir" <<'PY'
import sys
from pathlib import Path
from sparkmark import connectors, glue_versions
spark, hadoop = connectors.spark_and_hadoop_versions()
glue = glue_versions.release_for_spark(spark)
print(spark, hadoop, glue_versions.scala_version(spark), glue_versions.spark_line(spark),
      glue.iceberg, glue.delta, connectors.listing_dir(Path(sys.argv[1])))
PY
  ) || { echo "jars: $runtime could not say its versions" >&2; exit 1; }
  dir="$folder"
  modules=$(echo "$modules" | grep -v '^kafka-broker$')
  # SPARKMARK_KAFKA_CONNECTOR_VERSION: another patch release of Spark's Kafka connector on
  # the same line, for a mirror that lacks the Spark's own (Makefile's `runtimes` says why).
  overrides=(-Dspark.version="$spark" -Dhadoop.version="$hadoop" -Dscala.binary.version="$scala"
             -Dspark.line="$line" -Diceberg.version="$iceberg" -Ddelta.version="$delta"
             -Dspark.kafka.version="${SPARKMARK_KAFKA_CONNECTOR_VERSION:-$spark}")
  only=(-pl "$(echo $modules | tr ' ' ',')")
fi

fresh=1
for m in $modules; do
  cp="$dir/$m.classpath"
  if [ ! -s "$cp" ] || [ pom.xml -nt "$cp" ] || [ "$m/pom.xml" -nt "$cp" ]; then fresh=0; break; fi
  for jar in $(tr ':' ' ' < "$cp"); do [ -f "$jar" ] || { fresh=0; break 2; }; done
done
[ "$fresh" = 1 ] && exit 0

command -v mvn >/dev/null || { echo "jars: Maven (mvn) is not installed: apt-get install maven" >&2; exit 1; }
mkdir -p "$dir"
log=$(mktemp /tmp/sparkmark-jars.XXXXXX.log)
echo "jars: resolving connector jars from Maven Central into $dir"
if ! mvn -B -q dependency:build-classpath -Dsparkmark.jars.dir="$dir" "${overrides[@]}" "${only[@]}" >"$log" 2>&1; then
  echo "jars: Maven could not resolve the connector jars; see $log" >&2
  exit 1
fi
rm -f "$log"
# Maven's classpath files replace any an on-demand fetch wrote, and its pins with them.
for m in $modules; do touch "$dir/$m.classpath"; rm -f "$dir/$m.coordinates"; done
