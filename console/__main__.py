"""``python -m console``: the same as ``minikafka console``."""

import sys

from console.cli import main

sys.exit(main())
