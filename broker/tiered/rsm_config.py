"""The remote storage manager's settings: the broker's ``rsm.config.*`` keys, as the Aiven plugin names them.

Kafka hands every broker property that starts with
``remote.log.storage.manager.impl.prefix`` (default ``rsm.config.``) to the
remote storage manager. Users of Aiven's tiered-storage plugin for Kafka
already write these keys, so minikafka reads the same names (with the default
prefix shown; a different ``remote.log.storage.manager.impl.prefix`` is honoured):

=====================================================  ==========================================
``rsm.config.storage.backend.class``                   absent, or Aiven's S3 backend class
``rsm.config.storage.s3.bucket.name``                  required
``rsm.config.storage.s3.region``                       default ``AWS_REGION``, else ``us-east-1``
``rsm.config.storage.s3.endpoint.url``                 http(s) URL; absent: AWS
``rsm.config.storage.s3.path.style.access.enabled``    true/false; absent: true iff an endpoint is set
``rsm.config.storage.aws.access.key.id``               with the secret; absent: ``AWS_ACCESS_KEY_ID``
``rsm.config.storage.aws.secret.access.key``           with the key id; absent: ``AWS_SECRET_ACCESS_KEY``
``rsm.config.storage.aws.session.token``               absent: ``AWS_SESSION_TOKEN`` (env keys only)
``rsm.config.storage.s3.api.call.timeout``             ms per S3 request, default 30000
``rsm.config.storage.s3.multipart.upload.part.size``   bytes, [5 MiB, 2 GiB - 9], default 8 MiB
``rsm.config.key.prefix``                              prepended to every object key as is, default ""
``rsm.config.chunk.size``                              bytes, [1, 1073741823], default 4 MiB
=====================================================  ==========================================

``rsm.config.encryption.enabled=true`` and ``rsm.config.segment.format`` other
than ``kafka`` are refused: minikafka writes segments as they are, and must not
let a user believe they are encrypted. Other keys of the plugin (compression,
caches, rate limits) are accepted and ignored. Without credentials in the
properties or the environment, the S3 client falls back to the rest of the AWS
chain (web identity, ECS, instance metadata).

Bad values raise `ValueError` with one sentence that names the key. Parse only
when ``remote.log.storage.system.enable`` is true (the bucket is required).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from broker.tiered.object_store import ObjectStore
from broker.tiered.s3_store import MIN_PART_SIZE, S3ObjectStore

DEFAULT_PREFIX = "rsm.config."
PREFIX_KEY = "remote.log.storage.manager.impl.prefix"
S3_BACKEND_CLASS = "io.aiven.kafka.tieredstorage.storage.s3.S3Storage"
DEFAULT_CHUNK_SIZE = 4 * 1024 * 1024
MAX_CHUNK_SIZE = 1073741823
DEFAULT_PART_SIZE = 8 * 1024 * 1024
MAX_PART_SIZE = 2 * 1024 * 1024 * 1024 - 9
DEFAULT_REGION = "us-east-1"
DEFAULT_TIMEOUT_MS = 30_000

_INT32_MAX = (1 << 31) - 1


@dataclass(frozen=True, slots=True)
class RsmConfig:
    """Parsed ``rsm.config.*`` settings; secrets stay out of ``repr``."""

    bucket: str
    region: str = DEFAULT_REGION
    endpoint_url: str | None = None  # None: AWS's own endpoint for the region
    path_style: bool = False  # http://host/bucket/key rather than http://bucket.host/key
    access_key_id: str | None = field(default=None, repr=False)  # None: the S3 client's AWS chain
    secret_access_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    credentials_from_env: bool = False  # the key pair came from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY
    key_prefix: str = ""  # prepended to every object key as is
    chunk_size: int = DEFAULT_CHUNK_SIZE  # unit of remote reads (Aiven's chunk); objects are not chunked
    request_timeout_ms: int = DEFAULT_TIMEOUT_MS  # per S3 request
    part_size: int = DEFAULT_PART_SIZE  # multipart upload part


def _bool(key: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError(f"{key} must be true or false, not {value!r}")
    return lowered == "true"


def _int(key: str, value: str, low: int, high: int) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        raise ValueError(f"{key} must be an integer, not {value!r}") from None
    if not low <= number <= high:
        raise ValueError(f"{key} must be between {low} and {high}, not {number}")
    return number


def _endpoint(key: str, value: str) -> str:
    url = value.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{key} must be an http:// or https:// URL with a host, not {value!r}")
    return url


def _key_prefix(key: str, value: str) -> str:
    if value and (value.startswith("/") or "//" in value or any(p in (".", "..") for p in value.split("/"))):
        raise ValueError(f"{key} must not start with '/' or contain '//', '.' or '..' parts: {value!r}")
    return value


def parse_rsm_config(props: Mapping[str, str], env: Mapping[str, str] | None = None) -> RsmConfig:
    """`RsmConfig` from broker properties (all of them; the ``rsm.config.`` ones are read).

    ``env`` stands for ``os.environ`` (the AWS fallbacks above); pass a dict in tests.
    """
    env = os.environ if env is None else env
    prefix = props.get(PREFIX_KEY, DEFAULT_PREFIX).strip() or DEFAULT_PREFIX
    cfg = {k[len(prefix) :]: v for k, v in props.items() if k.startswith(prefix)}

    def name(short: str) -> str:
        return prefix + short

    backend = cfg.get("storage.backend.class", "").strip()
    if backend and backend != S3_BACKEND_CLASS:
        raise ValueError(
            f"{name('storage.backend.class')} must be {S3_BACKEND_CLASS} (the only backend), not {backend!r}"
        )
    if _bool(name("encryption.enabled"), cfg.get("encryption.enabled", "false")):
        raise ValueError(
            f"{name('encryption.enabled')}=true is not supported: segments are stored as they are"
        )
    segment_format = cfg.get("segment.format", "kafka").strip()
    if segment_format != "kafka":
        raise ValueError(f"{name('segment.format')} must be kafka, not {segment_format!r}")

    bucket = cfg.get("storage.s3.bucket.name", "").strip()
    if not bucket:
        raise ValueError(f"{name('storage.s3.bucket.name')} is required when tiered storage is enabled")
    if "/" in bucket:
        raise ValueError(f"{name('storage.s3.bucket.name')} must not contain '/': {bucket!r}")

    region = cfg.get("storage.s3.region", "").strip() or env.get("AWS_REGION", "").strip() or DEFAULT_REGION
    endpoint = cfg.get("storage.s3.endpoint.url", "").strip()
    endpoint_url = _endpoint(name("storage.s3.endpoint.url"), endpoint) if endpoint else None
    path_style_value = cfg.get("storage.s3.path.style.access.enabled", "").strip()
    path_style = (
        _bool(name("storage.s3.path.style.access.enabled"), path_style_value)
        if path_style_value
        else endpoint_url is not None
    )

    key_id = cfg.get("storage.aws.access.key.id") or None
    secret = cfg.get("storage.aws.secret.access.key") or None
    token = cfg.get("storage.aws.session.token") or None
    from_env = False
    if (key_id is None) != (secret is None):
        raise ValueError(
            f"{name('storage.aws.access.key.id')} and {name('storage.aws.secret.access.key')} "
            "must be set together"
        )
    if key_id is None:
        key_id, secret = env.get("AWS_ACCESS_KEY_ID") or None, env.get("AWS_SECRET_ACCESS_KEY") or None
        if (key_id is None) != (secret is None):
            raise ValueError(
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together in the environment"
            )
        from_env = key_id is not None
        if from_env and token is None:  # static keys from the properties never take the env's token
            token = env.get("AWS_SESSION_TOKEN") or None

    return RsmConfig(
        bucket=bucket,
        region=region,
        endpoint_url=endpoint_url,
        path_style=path_style,
        access_key_id=key_id,
        secret_access_key=secret,
        session_token=token,
        credentials_from_env=from_env,
        key_prefix=_key_prefix(name("key.prefix"), cfg.get("key.prefix", "")),
        chunk_size=_int(
            name("chunk.size"), cfg.get("chunk.size", str(DEFAULT_CHUNK_SIZE)), 1, MAX_CHUNK_SIZE
        ),
        request_timeout_ms=_int(
            name("storage.s3.api.call.timeout"),
            cfg.get("storage.s3.api.call.timeout", str(DEFAULT_TIMEOUT_MS)),
            1,
            _INT32_MAX,
        ),
        part_size=_int(
            name("storage.s3.multipart.upload.part.size"),
            cfg.get("storage.s3.multipart.upload.part.size", str(DEFAULT_PART_SIZE)),
            MIN_PART_SIZE,
            MAX_PART_SIZE,
        ),
    )


def make_object_store(cfg: RsmConfig) -> ObjectStore:
    """The `S3ObjectStore` ``cfg`` describes."""
    return S3ObjectStore(
        cfg.bucket,
        endpoint_url=cfg.endpoint_url,
        region=cfg.region,
        path_style=cfg.path_style,
        access_key_id=cfg.access_key_id,
        secret_access_key=cfg.secret_access_key,
        session_token=cfg.session_token,
        request_timeout_s=cfg.request_timeout_ms / 1000,
        part_size=cfg.part_size,
    )
