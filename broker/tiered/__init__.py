"""Tiered storage (KIP-405): closed segments in an object store, read back below the local log start."""
