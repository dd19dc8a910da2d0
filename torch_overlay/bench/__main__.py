"""The worker side of the bench (`python -m torch_overlay.bench TASK ARGS`), see worker.py."""

import sys

from .worker import worker_main

sys.exit(worker_main(sys.argv[1:]))
