from attnlab.nn.attention import attention
from attnlab.nn.model import LM, build
from attnlab.nn.spec import ModelSpec, spec_from_config

__all__ = ["attention", "LM", "build", "ModelSpec", "spec_from_config"]
