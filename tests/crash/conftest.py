"""Crash tests (marker ``crash``: `make test-crash`): brokers and clients SIGKILLed while they work."""
