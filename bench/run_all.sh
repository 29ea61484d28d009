#!/usr/bin/env bash
# Run every benchmark in bench/.venv-peers (created by bench/setup_peers.sh when missing).
#
#   bash bench/run_all.sh            # full runs (about an hour on 2 vCPUs)
#   bash bench/run_all.sh --quick    # smoke runs (about a minute), not committed
#   bash bench/run_all.sh perturbation accuracy   # only these
#
# Without names: perturbation, accuracy, ingestion, estimation, their numeric runs
# (ingestion+piecewise and estimation+piecewise: --mechanism piecewise), then every other
# bench/*.py script (not _*.py, not report.py). NAME+MECHANISM runs NAME with
# --mechanism MECHANISM. A failing script does not stop the others; the exit status is
# non-zero if any failed.
#
# Each script prints one JSON object on stdout and writes it to bench/results/<name>.json
# (<name>-quick.json with --quick); progress goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
python="${PYTHON:-$here/.venv-peers/bin/python}"

quick=()
names=()
for arg in "$@"; do
    case "$arg" in
        --quick) quick=(--quick) ;;
        *) names+=("$arg") ;;
    esac
done
if [ ${#names[@]} -eq 0 ]; then
    names=(perturbation accuracy ingestion estimation ingestion+piecewise estimation+piecewise)
    for script in "$here"/*.py; do
        name="$(basename "$script" .py)"
        case "$name" in
            _* | report | perturbation | accuracy | ingestion | estimation) ;;
            *) names+=("$name") ;;
        esac
    done
fi

if [ ! -x "$python" ] || [ ! -x "$here/.venv-logistic/bin/python" ]; then
    bash "$here/setup_peers.sh"
fi

cd "$root"
failed=()
for name in "${names[@]}"; do
    echo "== $name" >&2
    start=$(date +%s)
    script="${name%%+*}"
    extra=()
    if [ "$script" != "$name" ]; then
        extra=(--mechanism "${name#*+}")
    fi
    runner="$python"
    case "$script" in  # diffprivlib's LogisticRegression needs scikit-learn < 1.6
        logistic*) runner="${LOGISTIC_PYTHON:-$here/.venv-logistic/bin/python}" ;;
    esac
    if "$runner" "bench/$script.py" "${quick[@]}" "${extra[@]}"; then
        echo "== $name done in $(( $(date +%s) - start )) s" >&2
    else
        echo "== $name FAILED after $(( $(date +%s) - start )) s" >&2
        failed+=("$name")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "failed: ${failed[*]}" >&2
    exit 1
fi
