"""rsm.config.* parsing: Aiven's key names, defaults, the AWS environment fallbacks, one readable error per bad key."""

from __future__ import annotations

import pytest

from broker.tiered.rsm_config import (
    DEFAULT_CHUNK_SIZE,
    S3_BACKEND_CLASS,
    RsmConfig,
    make_object_store,
    parse_rsm_config,
)
from broker.tiered.s3_store import S3ObjectStore

BUCKET = {"rsm.config.storage.s3.bucket.name": "tiered"}


def test_defaults_with_only_the_bucket() -> None:
    cfg = parse_rsm_config(BUCKET, env={})
    assert cfg == RsmConfig(bucket="tiered")
    assert (cfg.region, cfg.endpoint_url, cfg.path_style, cfg.key_prefix) == ("us-east-1", None, False, "")
    assert cfg.chunk_size == DEFAULT_CHUNK_SIZE == 4 * 1024 * 1024
    assert (cfg.access_key_id, cfg.secret_access_key, cfg.session_token) == (None, None, None)


def test_every_key_as_aiven_names_it() -> None:
    props = {
        "remote.log.storage.system.enable": "true",
        "log.dirs": "/data",  # not ours: ignored
        "rsm.config.storage.backend.class": S3_BACKEND_CLASS,
        "rsm.config.storage.s3.endpoint.url": "http://127.0.0.1:8333",
        "rsm.config.storage.s3.bucket.name": "kafka-tiered",
        "rsm.config.storage.s3.region": "eu-west-1",
        "rsm.config.storage.s3.path.style.access.enabled": "FALSE",
        "rsm.config.storage.aws.access.key.id": "AKID",
        "rsm.config.storage.aws.secret.access.key": "SECRET",
        "rsm.config.storage.aws.session.token": "TOKEN",
        "rsm.config.key.prefix": "cluster-a/",
        "rsm.config.chunk.size": "1048576",
        "rsm.config.storage.s3.api.call.timeout": "5000",
        "rsm.config.storage.s3.multipart.upload.part.size": str(16 * 1024 * 1024),
        "rsm.config.compression.enabled": "true",  # accepted, ignored
        "rsm.config.fetch.chunk.cache.size": "1000",  # accepted, ignored
    }
    cfg = parse_rsm_config(props, env={"AWS_ACCESS_KEY_ID": "env-key", "AWS_SECRET_ACCESS_KEY": "env-secret"})
    assert cfg == RsmConfig(
        bucket="kafka-tiered",
        region="eu-west-1",
        endpoint_url="http://127.0.0.1:8333",
        path_style=False,
        access_key_id="AKID",
        secret_access_key="SECRET",
        session_token="TOKEN",
        key_prefix="cluster-a/",
        chunk_size=1048576,
        request_timeout_ms=5000,
        part_size=16 * 1024 * 1024,
    )


def test_secrets_stay_out_of_repr() -> None:
    props = {
        **BUCKET,
        "rsm.config.storage.aws.access.key.id": "AKID",
        "rsm.config.storage.aws.secret.access.key": "very-secret",
        "rsm.config.storage.aws.session.token": "tok-secret",
    }
    text = repr(parse_rsm_config(props, env={}))
    assert "very-secret" not in text and "tok-secret" not in text and "AKID" not in text


def test_path_style_defaults_to_on_with_an_endpoint() -> None:
    cfg = parse_rsm_config({**BUCKET, "rsm.config.storage.s3.endpoint.url": "https://s3.example.com"}, env={})
    assert cfg.path_style is True
    assert parse_rsm_config(BUCKET, env={}).path_style is False


def test_credentials_and_region_from_the_aws_environment() -> None:
    env = {
        "AWS_ACCESS_KEY_ID": "env-key",
        "AWS_SECRET_ACCESS_KEY": "env-secret",
        "AWS_SESSION_TOKEN": "env-token",
        "AWS_REGION": "ap-south-1",
    }
    cfg = parse_rsm_config(BUCKET, env=env)
    assert (cfg.access_key_id, cfg.secret_access_key, cfg.session_token) == (
        "env-key",
        "env-secret",
        "env-token",
    )
    assert cfg.credentials_from_env and cfg.region == "ap-south-1"
    # static keys in the properties win, and never take the environment's session token
    static = parse_rsm_config(
        {
            **BUCKET,
            "rsm.config.storage.aws.access.key.id": "AKID",
            "rsm.config.storage.aws.secret.access.key": "SECRET",
            "rsm.config.storage.s3.region": "us-west-2",
        },
        env=env,
    )
    assert (static.access_key_id, static.session_token, static.credentials_from_env) == ("AKID", None, False)
    assert static.region == "us-west-2"


def test_another_rsm_prefix_is_honoured() -> None:
    props = {"remote.log.storage.manager.impl.prefix": "tier.", "tier.storage.s3.bucket.name": "b2", **BUCKET}
    assert parse_rsm_config(props, env={}).bucket == "b2"


@pytest.mark.parametrize(
    ("props", "env", "named"),
    [
        ({}, {}, "rsm.config.storage.s3.bucket.name"),
        ({"rsm.config.storage.s3.bucket.name": "  "}, {}, "rsm.config.storage.s3.bucket.name"),
        ({**BUCKET, "rsm.config.storage.backend.class": "x.Gcs"}, {}, "rsm.config.storage.backend.class"),
        (
            {**BUCKET, "rsm.config.storage.aws.access.key.id": "AKID"},
            {},
            "rsm.config.storage.aws.access.key.id",
        ),
        (
            {**BUCKET, "rsm.config.storage.aws.secret.access.key": "S"},
            {},
            "rsm.config.storage.aws.secret.access.key",
        ),
        (BUCKET, {"AWS_ACCESS_KEY_ID": "only-the-id"}, "AWS_SECRET_ACCESS_KEY"),
        (
            {**BUCKET, "rsm.config.storage.s3.endpoint.url": "127.0.0.1:8333"},
            {},
            "rsm.config.storage.s3.endpoint.url",
        ),
        (
            {**BUCKET, "rsm.config.storage.s3.endpoint.url": "ftp://h"},
            {},
            "rsm.config.storage.s3.endpoint.url",
        ),
        (
            {**BUCKET, "rsm.config.storage.s3.path.style.access.enabled": "yes"},
            {},
            "path.style.access.enabled",
        ),
        ({**BUCKET, "rsm.config.chunk.size": "0"}, {}, "rsm.config.chunk.size"),
        ({**BUCKET, "rsm.config.chunk.size": "4MB"}, {}, "rsm.config.chunk.size"),
        ({**BUCKET, "rsm.config.chunk.size": "1073741824"}, {}, "rsm.config.chunk.size"),
        (
            {**BUCKET, "rsm.config.storage.s3.multipart.upload.part.size": "1024"},
            {},
            "multipart.upload.part.size",
        ),
        ({**BUCKET, "rsm.config.storage.s3.api.call.timeout": "-1"}, {}, "api.call.timeout"),
        ({**BUCKET, "rsm.config.key.prefix": "/abs/"}, {}, "rsm.config.key.prefix"),
        ({**BUCKET, "rsm.config.key.prefix": "a//b/"}, {}, "rsm.config.key.prefix"),
        ({**BUCKET, "rsm.config.encryption.enabled": "true"}, {}, "rsm.config.encryption.enabled"),
        ({**BUCKET, "rsm.config.segment.format": "iceberg"}, {}, "rsm.config.segment.format"),
    ],
)
def test_bad_values_name_the_key_in_one_sentence(
    props: dict[str, str], env: dict[str, str], named: str
) -> None:
    with pytest.raises(ValueError) as info:
        parse_rsm_config(props, env=env)
    message = str(info.value)
    assert named in message and "\n" not in message


def test_make_object_store_builds_an_s3_store() -> None:
    cfg = parse_rsm_config(
        {
            **BUCKET,
            "rsm.config.storage.s3.endpoint.url": "http://127.0.0.1:1",
            "rsm.config.storage.aws.access.key.id": "AKID",
            "rsm.config.storage.aws.secret.access.key": "SECRET",
        },
        env={},
    )
    store = make_object_store(cfg)
    assert isinstance(store, S3ObjectStore)
    assert (store.bucket, store.endpoint_url) == ("tiered", "http://127.0.0.1:1")
    store.close()
