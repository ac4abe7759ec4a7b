#!/usr/bin/env bash
# The prepared GPU run of the benchmarks that need no training: E6/S7/S8 (cost), S4 (multihead) and S5/S6
# (decode), each written with its provenance (NVML clocks and throttle reasons on a GPU) to
# $OUT/<experiment>/result.json.
#
#   tools/gpu-benchmarks.sh chapter     # on the GPU machine: the chapter's sizes, until memory runs out
#   tools/gpu-benchmarks.sh quick       # anywhere: the quick profile's sizes (the CPU caps), end to end
#
# The GPU machine has torch, pyyaml, tqdm and nvidia-ml-py but not jsonschema: carry it as wheels in .whl/
# (fetched here once, for its Python 3.12):
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
#     jsonschema jsonschema-specifications referencing rpds-py
# then `run` it with carry [".whl"].
set -euo pipefail
profile=${1:?usage: tools/gpu-benchmarks.sh PROFILE (chapter on a GPU, quick anywhere)}
out=${OUT:-results/benchmarks-$profile}
cd "$(dirname "$0")/.."
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:src
else
  export PYTHONPATH=src${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1
settings=$(python3 - "$profile" <<'PY'
import sys
from attnlab.check import check
from attnlab.config import chosen, job_settings
cfg = check(chosen({"profile": sys.argv[1]}, []))  # every setting checked before anything runs
print(job_settings(cfg, "seed", "device", "cost", "devices", "multihead", "decode"))
PY
)
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'device', torch.cuda.get_device_name() if torch.cuda.is_available() else 'cpu')"
for experiment in cost multihead decode; do
  echo "== $experiment"
  python3 -m attnlab analyse "$experiment" --config "$settings" --out "$out/$experiment/result.json"
done
echo "results in $out"
