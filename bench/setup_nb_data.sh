#!/usr/bin/env bash
# Fetch the categorical data sets of bench/naive_bayes_repair.py into bench/.cache/mlbench
# (not committed: the R package that carries them is GPL-2, and a user's clone needs
# none of it). They come from Debian's r-cran-mlbench (CRAN package mlbench 2.1-3 by
# Leisch and Dimitriadou), which bundles UCI data sets as R .rda files:
#   HouseVotes84  UCI Congressional Voting Records (Schlimmer, 1987)
#   Soybean       UCI Soybean (Large) (Michalski and Chilausky, 1980)
#   BreastCancer  UCI Breast Cancer Wisconsin (Original) (Wolberg, 1992)
#   DNA           Statlog DNA (primate splice junctions, UCI Molecular Biology)
#   Zoo           UCI Zoo (Forsyth, 1990)
# and from Debian's r-cran-kernlab (CRAN kernlab, GPL-2), into bench/.cache/kernlab:
#   promotergene  UCI Molecular Biology (Promoter Gene Sequences) (Harley et al., 1990)
#   income        Impact Resources marketing survey (Hastie, Tibshirani and Friedman, ESL)
# (the last five for bench/naive_bayes_defaults.py).
# The UCI originals are CC BY 4.0; the package is GPL-2 (its copyright file is kept
# beside the data). Reading .rda needs pyreadr (pip install pyreadr; bench only).
#
#   bash bench/setup_nb_data.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="$here/.cache/mlbench"
mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download r-cran-mlbench >/dev/null 2>&1)
deb="$(ls "$work"/r-cran-mlbench_*.deb)"
dpkg-deb -x "$deb" "$work/x"
for name in HouseVotes84 Soybean BreastCancer DNA Zoo; do
    cp "$work/x/usr/lib/R/site-library/mlbench/data/$name.rda" "$cache/"
done
cp "$work/x/usr/share/doc/r-cran-mlbench/copyright" "$cache/copyright"
basename "$deb" > "$cache/SOURCE"
(cd "$cache" && sha256sum ./*.rda > SHA256SUMS && cat SOURCE SHA256SUMS)

kernlab="$here/.cache/kernlab"
mkdir -p "$kernlab"
(cd "$work" && apt-get download r-cran-kernlab >/dev/null 2>&1)
deb="$(ls "$work"/r-cran-kernlab_*.deb)"
dpkg-deb -x "$deb" "$work/k"
for name in promotergene income; do
    cp "$work/k/usr/lib/R/site-library/kernlab/data/$name.rda" "$kernlab/"
done
cp "$work/k/usr/share/doc/r-cran-kernlab/copyright" "$kernlab/copyright"
basename "$deb" > "$kernlab/SOURCE"
(cd "$kernlab" && sha256sum ./*.rda > SHA256SUMS && cat SOURCE SHA256SUMS)
