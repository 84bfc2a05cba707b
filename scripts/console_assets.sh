#!/usr/bin/env bash
# The console's front-end libraries, from the npm registry, copied as built into the
# Python package (so `pip install` needs no Node.js), and the visual job editor bundled. Run after changing the versions
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
# The visual job editor: React Flow, dagre and CodeMirror, bundled with esbuild into one script and one stylesheet.
node_modules/.bin/esbuild studio/main.jsx --bundle --minify --format=iife --jsx=automatic \
  --define:process.env.NODE_ENV='"production"' --target=es2020 --log-level=warning \
  --outfile=../src/sparkmark/console/static/studio/studio.js
# The workflow graph's layout in the browser: dagre, bundled with its small driver.
node_modules/.bin/esbuild graph/main.js --bundle --minify --format=iife --target=es2020 --log-level=warning \
  --outfile=../src/sparkmark/console/static/graph.js
for p in @xyflow/react @xyflow/system @dagrejs/dagre @dagrejs/graphlib react react-dom scheduler zustand use-sync-external-store classcat d3-zoom d3-drag d3-selection \
  @codemirror/state @codemirror/view @codemirror/language @codemirror/commands @codemirror/lang-python @codemirror/lang-sql \
  @lezer/common @lezer/highlight @lezer/lr @lezer/python @marijn/find-cluster-break style-mod w3c-keyname crelt; do
  [ -f "node_modules/$p/LICENSE" ] && cp "node_modules/$p/LICENSE" "../src/sparkmark/console/static/studio/$(echo "$p" | tr '/@' '__').LICENSE"
done
node -e 'for(const p of ["chart.js","htmx.org","@kurkle/color","@xyflow/react","@dagrejs/dagre","react","react-dom","@codemirror/view","@codemirror/lang-python","@codemirror/lang-sql","esbuild"])console.log(p,require("./node_modules/"+p+"/package.json").version)' > "$out/VERSIONS"
echo "console-assets: $(tr '\n' ' ' < "$out/VERSIONS")into $out"
