#!/usr/bin/env bash
# Create bench/.venv-peers: ldpcollect (editable) plus the peer libraries the benchmarks
# compare against. Re-running is cheap: pip skips what is installed already.
#
#   bash bench/setup_peers.sh            # uses python3 from PATH
#   PYTHON=/usr/bin/python3.11 bash bench/setup_peers.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
venv="$here/.venv-peers"
python="${PYTHON:-python3}"

# bench/ingestion.py's load generator: wrk (Debian package wrk); without it the script
# skips its wrk measurements and says so
if ! command -v wrk >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get install -y -q wrk || { apt-get update -q && apt-get install -y -q wrk; } \
            || echo "setup_peers.sh: apt-get could not install wrk (bench/ingestion.py needs it)" >&2
    else
        echo "setup_peers.sh: wrk is not installed; bench/ingestion.py needs it:" \
            "sudo apt-get install wrk (Debian/Ubuntu), brew install wrk (macOS)," \
            "or build https://github.com/wg/wrk" >&2
    fi
fi

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
# the project with the roles the benchmarks use (client SDK + aggregator server, and
# psycopg for the PostgreSQL parts of bench/ingestion.py and bench/training_service.py)
"$venv/bin/python" -m pip install --quiet -e "$root[client,aggregator,postgres]"
# peers, pinned; pure-ldp imports scikit-learn, statsmodels and xxhash without declaring them;
# mlxtend is the non-private itemset reference of bench/itemsets.py; diffprivlib and
# opendp are the central-DP libraries bench/numeric_speed.py times per record (diffprivlib's
# LogisticRegression is bench/logistic.py's central-DP peer); pyreadr reads the .rda data
# sets of bench/naive_bayes_repair.py (see bench/setup_nb_data.sh); matplotlib draws
# docs/knn.png and the PNG plots of bench/logistic_plots.py
"$venv/bin/python" -m pip install --quiet \
    "pure-ldp==1.2.0" "multi-freq-ldpy==0.2.5" \
    scikit-learn statsmodels "xxhash<4" "mlxtend>=0.23" \
    "diffprivlib==0.6.6" "opendp==0.16.0" "pyreadr>=0.5" "matplotlib>=3.8"
# bench/logistic*.py: diffprivlib 0.6.6's LogisticRegression passes multi_class to
# scikit-learn, which 1.6 deprecated and 1.8 removed, and mlxtend above needs a newer one:
# the logistic benchmarks get their own environment, bench/.venv-logistic
logistic="$here/.venv-logistic"
if [ ! -x "$logistic/bin/python" ]; then
    "$python" -m venv "$logistic"
fi
"$logistic/bin/python" -m pip install --quiet -e "$root" \
    "scikit-learn>=1.4,<1.6" "diffprivlib==0.6.6" "matplotlib>=3.8"
"$venv/bin/python" - <<'PY'
import importlib.metadata as md
for name in ("ldpcollect", "numpy", "psycopg", "pure-ldp", "multi-freq-ldpy", "mlxtend", "diffprivlib", "opendp", "matplotlib"):
    print(f"{name}=={md.version(name)}")
PY
