# Sourced by the prepared device runs (tools/gpu-*.sh), from the project root: the package from src/, the
# wheels a machine lacks from .whl/ (installed aside, in /tmp/site), unbuffered output, and a line saying which
# torch and which device this is.
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:src
else
  export PYTHONPATH=src${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'on',
      torch.cuda.get_device_name() if torch.cuda.is_available() else 'the cpu')"
