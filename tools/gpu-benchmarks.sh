#!/usr/bin/env bash
# The prepared GPU run: every benchmark that needs neither data nor training (E6/S7/S8 `cost`, S4
# `multihead`, S5/S6 `decode`), each with its provenance (NVML clocks and throttle reasons on a GPU), then, in
# a clean git checkout, a version of the report that holds them (`publish --only`).
#
#   tools/gpu-benchmarks.sh chapter     # on a GPU: the chapter's sizes, n doubling until memory runs out
#   tools/gpu-benchmarks.sh quick       # anywhere: the quick profile's sizes (the CPU caps), end to end
#
# Results go to results/<profile>/ ($OUT on the lent GPU machine). A result already there from this commit
# with the same settings is kept: run the same command in the checkout after the files came back from a GPU
# machine, and it publishes them instead of measuring again. A tree copied to a GPU machine travels without
# .git: set ATTNLAB_COMMIT to the clean commit it was copied at, and every run file records it as given.
#
# A GPU machine with torch but without jsonschema takes it as wheels in .whl/ (here, once, for Python 3.12):
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
#     jsonschema jsonschema-specifications referencing rpds-py
set -euo pipefail
profile=${1:?usage: tools/gpu-benchmarks.sh PROFILE (chapter on a GPU, quick anywhere)}
cd "$(dirname "$0")/.."
results=${OUT:-results/$profile}
source tools/device-env.sh
python3 -m attnlab benchmarks --config "$profile" --results "$results"
if git rev-parse --git-dir >/dev/null 2>&1 && [ -z "$(git status --porcelain)" ]; then
  only=$(python3 -c "from attnlab.registry import standalone; print(','.join(e.name for e in standalone()))")
  python3 -m attnlab publish --config "$profile" --results "$results" --only "$only"
else
  echo "results in $results; not published: a version comes from a clean git checkout. Bring them to" \
       "results/$profile/ in the checkout at commit ${ATTNLAB_COMMIT:-<its commit>} and run this command there."
fi
