#!/usr/bin/env bash
# Refresh the dashboard's vendored browser assets from the npm registry.
#
# The dashboard (/ui) and the API docs (/docs) load nothing from a CDN: the files they
# need are committed under aggregator/ldp_aggregator/ui/static/vendor/, each beside its
# licence, and VERSIONS there records which package version each came from. To move to
# a newer release, change a version below, run this script from the repository root
# (it needs npm and tar), check the dashboard in a browser (the tests under
# tests/aggregator/ui/ do), and commit the changed files together.
#
#   bash scripts/vendor-ui.sh
set -euo pipefail
cd "$(dirname "$0")/.."

CHART_JS=4.5.1                 # MIT: the charts
CHART_ERROR_BARS=4.4.5         # MIT: bar charts with error bars (a Chart.js controller)
SWAGGER_UI_DIST=5.35.0         # Apache-2.0: the /docs page

OUT=aggregator/ldp_aggregator/ui/static/vendor
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

unpack() {  # unpack NAME VERSION -> $WORK/NAME/package
  local name="$1" version="$2"
  mkdir -p "$WORK/$name"
  (cd "$WORK/$name" && npm pack --silent "$name@$version" >/dev/null && tar -xzf ./*.tgz)
}

unpack chart.js "$CHART_JS"
unpack chartjs-chart-error-bars "$CHART_ERROR_BARS"
unpack swagger-ui-dist "$SWAGGER_UI_DIST"

rm -rf "$OUT"
mkdir -p "$OUT"
cp "$WORK/chart.js/package/dist/chart.umd.min.js" "$OUT/chart.umd.min.js"
cp "$WORK/chart.js/package/LICENSE.md" "$OUT/chart.js.LICENSE.md"
cp "$WORK/chartjs-chart-error-bars/package/build/index.umd.min.js" \
  "$OUT/chartjs-chart-error-bars.umd.min.js"
cp "$WORK/chartjs-chart-error-bars/package/LICENSE" "$OUT/chartjs-chart-error-bars.LICENSE"
cp "$WORK/swagger-ui-dist/package/swagger-ui-bundle.js" "$OUT/swagger-ui-bundle.js"
cp "$WORK/swagger-ui-dist/package/swagger-ui.css" "$OUT/swagger-ui.css"
cp "$WORK/swagger-ui-dist/package/favicon-32x32.png" "$OUT/favicon-32x32.png"
cp "$WORK/swagger-ui-dist/package/LICENSE" "$OUT/swagger-ui.LICENSE"
cp "$WORK/swagger-ui-dist/package/NOTICE" "$OUT/swagger-ui.NOTICE"
# their source map comments point at files that are not vendored
sed -i 's|//# sourceMappingURL=[^ ]*$||' "$OUT"/*.js

cat > "$OUT/VERSIONS" <<EOF
# Written by scripts/vendor-ui.sh from the npm registry (npm pack); do not edit by hand.
chart.js $CHART_JS MIT chart.umd.min.js
chartjs-chart-error-bars $CHART_ERROR_BARS MIT chartjs-chart-error-bars.umd.min.js
swagger-ui-dist $SWAGGER_UI_DIST Apache-2.0 swagger-ui-bundle.js swagger-ui.css favicon-32x32.png
EOF
echo "vendored into $OUT:"
cat "$OUT/VERSIONS"
