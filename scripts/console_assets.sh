#!/usr/bin/env bash
# The console's front-end libraries, from the npm registry, copied as built into the
# Python package (so `pip install` needs no Node.js). Run after changing the versions
# in console-assets/package.json; the copies are committed.
set -euo pipefail
cd "$(dirname "$0")/../console-assets"
npm install --no-audit --no-fund --silent  # exact versions in package.json; no lock file (it would record download addresses)
out=../src/sparkmark/console/static/vendor
mkdir -p "$out"
cp node_modules/htmx.org/dist/htmx.min.js "$out/htmx.min.js"
cp node_modules/htmx.org/LICENSE "$out/htmx.LICENSE"
cp node_modules/chart.js/dist/chart.umd.min.js "$out/chart.umd.min.js"
cp node_modules/chart.js/LICENSE.md "$out/chart.LICENSE.md"
node -e 'for(const p of ["chart.js","htmx.org","@kurkle/color"])console.log(p,require("./node_modules/"+p+"/package.json").version)' > "$out/VERSIONS"
echo "console-assets: $(tr '\n' ' ' < "$out/VERSIONS")into $out"
