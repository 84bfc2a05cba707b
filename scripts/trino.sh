#!/usr/bin/env bash
# Trino, the engine the catalog's tests query Hive and Iceberg tables with through the
# Glue API: its server from Maven Central (resolved by mvn, never downloaded by hand),
# unpacked into .trino with the Hive and Iceberg plugins only. A no-op when present.
# Trino 476 is the newest server Maven Central serves as a tarball here (477 to 483
# are not); it needs Java 24 or newer, and runs on the JDK 25 under /usr/lib/jvm.
set -euo pipefail
VERSION="${SPARKMARK_TRINO_VERSION:-476}"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$HERE/.trino/trino-server-$VERSION"
if [ -x "$DEST/bin/launcher" ] && [ -d "$DEST/plugin/hive" ] && [ -d "$DEST/plugin/iceberg" ]; then
  exit 0
fi
ARTIFACT="io.trino:trino-server:$VERSION:tar.gz"
mvn -q dependency:get -Dartifact="$ARTIFACT" -Dtransitive=false
TARBALL="${HOME}/.m2/repository/io/trino/trino-server/$VERSION/trino-server-$VERSION.tar.gz"
rm -rf "$DEST" "$HERE/.trino/unpacking"
mkdir -p "$HERE/.trino/unpacking"
# The whole archive: its plugins' jars are hard links to one another's.
tar xzf "$TARBALL" -C "$HERE/.trino/unpacking"
find "$HERE/.trino/unpacking/trino-server-$VERSION/plugin" -mindepth 1 -maxdepth 1 \
  ! -name hive ! -name iceberg -exec rm -rf {} +
mv "$HERE/.trino/unpacking/trino-server-$VERSION" "$DEST"
rmdir "$HERE/.trino/unpacking"
echo "trino: $DEST (plugins: hive, iceberg)"
