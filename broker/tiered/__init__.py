"""Tiered storage (KIP-405): closed segments copied to an object store and read back from it.

Sits beside the log, not inside it (ARCHITECTURE.md): `object_store` is the narrow interface to
any object store (`s3_store` on S3, `memory_store` for tests), `rsm_config` reads the broker's
``rsm.config.*`` keys, and `segment_store` lays a segment's objects out as the Aiven plugin does.
"""
