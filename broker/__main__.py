"""`python -m broker [...]`: run a broker (same flags as `minikafka broker`)."""

import sys

from broker.cli import run_broker

sys.exit(run_broker(sys.argv[1:], prog="python -m broker"))
