"""`import torch` under the torch that PYTHONPATH selects (the first import also writes .pyc).

Prints one JSON list: torch's version and how many overlay patches it carries.
"""

import json

import torch

print(json.dumps([torch.__version__, len(getattr(torch.version, "overlay_patches", ()))]))
