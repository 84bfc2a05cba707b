#!/usr/bin/env bash
# `make jars`: resolve the Maven project in jars/ from Maven Central into Maven's local
# repository and write one classpath file per module into the jars folder
# (SPARKMARK_JARS_DIR, default $XDG_CACHE_HOME/sparkmark/jars or ~/.cache/sparkmark/jars).
# A second call with every classpath file newer than the poms, and every jar it names
# still present, does nothing.
set -uo pipefail
cd "$(dirname "$0")/../jars"
dir="${SPARKMARK_JARS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sparkmark/jars}"
modules=$(sed -n 's|.*<module>\(.*\)</module>.*|\1|p' pom.xml)

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
if ! mvn -B -q dependency:build-classpath -Dsparkmark.jars.dir="$dir" >"$log" 2>&1; then
  echo "jars: Maven could not resolve the connector jars; see $log" >&2
  exit 1
fi
rm -f "$log"
# Maven's classpath files replace any an on-demand fetch wrote, and its pins with them.
for m in $modules; do touch "$dir/$m.classpath"; rm -f "$dir/$m.coordinates"; done
