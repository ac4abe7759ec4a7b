#!/usr/bin/env bash
# The prepared run of a whole profile on a machine without Snakemake (the lent GPU machine): every job of the
# DAG through `python -m attnlab.runner`, several at once, then, in a clean git checkout, a version.
#
#   ATTNLAB_COMMIT=<commit> tools/gpu-chapter.sh chapter 12     # on the GPU machine: 12 jobs share the GPU
#   tools/gpu-chapter.sh smoke 2                                 # anywhere: the same path, end to end, in minutes
#   tools/gpu-chapter.sh chapter --dry-run                       # anywhere: check the profile, list its jobs, run none
#
# It runs every job of the profile's plan at every seed the profile lists (chapter: 1337, 1338, 1339), so every
# experiment whose settings differ from quick's (the home page's list) is among them.
#
# Results go to $OUT/<profile>/ on a device machine (what comes back), else results/<profile>/. A tree copied
# to a GPU machine travels without .git: ATTNLAB_COMMIT names the clean commit it was copied at, and every run
# file records it. Back here, copy the files to results/<profile>/ in the checkout at that commit and run the
# same command: every job is kept (the runner's ledger, results/<profile>/.runner/, says it finished at that
# commit with those settings), the verdicts are computed, and the results are published as a version.
# Checkpoints stay on the machine that trained (the published version holds none).
#
# The corpus: the profile downloads it into results/<profile>/data/input.txt; a machine without a network
# takes it there (`carry`). jsonschema, which the GPU machine lacks, travels as wheels in .whl/ (see
# tools/gpu-benchmarks.sh for the pip download line).
set -euo pipefail
profile=${1:?usage: tools/gpu-chapter.sh PROFILE [JOBS] [--dry-run]}
jobs=2
dry=
for arg in "${@:2}"; do
  case $arg in
    -n|--dry-run) dry=--dry-run ;;
    *) jobs=$arg ;;
  esac
done
cd "$(dirname "$0")/.."
source tools/device-env.sh
if [ -n "$dry" ]; then
  exec python3 -m attnlab.runner "$profile" --jobs "$jobs" --dry-run
fi
results=results/$profile
if [ -n "${OUT:-}" ]; then  # a device machine: write where the files come back from, corpus included
  mkdir -p "$OUT/$profile/data"
  [ -f "$results/data/input.txt" ] && cp "$results/data/input.txt" "$OUT/$profile/data/"
  results=$OUT/$profile
fi
start=$(date +%s)
python3 -m attnlab.runner "$profile" --results "$results" --jobs "$jobs"
echo "the whole $profile profile: $(( $(date +%s) - start )) s"
if [ -n "${OUT:-}" ]; then
  find "$results" -name 'ckpt.pt*' -delete  # too large to bring back, and never published
  rm -f "$results/data/train.bin" "$results/data/val.bin"
fi
if git rev-parse --git-dir >/dev/null 2>&1 && [ -z "$(git status --porcelain)" ] && [ -z "${OUT:-}" ]; then
  python3 -m attnlab publish --config "$profile" --results "$results"
else
  echo "results in $results; not published: a version comes from a clean git checkout. Bring them to" \
       "results/$profile/ in the checkout at commit ${ATTNLAB_COMMIT:-<its commit>} and run this command there."
fi
