"""`S3ObjectStore`: the `ObjectStore` contract on any S3-compatible endpoint, through obstore.

obstore (Rust's object_store crate under Python bindings) does the HTTP, SigV4
signing, retries and multipart uploads; its coroutines run on its own tokio
threads and are awaited from our loop (uvloop included) like any other future.

Addressing: ``path_style=True`` sends ``http://host/bucket/key`` (SeaweedFS, MinIO
and most S3-compatible stores), ``False`` sends ``https://bucket.host/key`` (AWS's
default). Plain ``http://`` endpoints are allowed only when ``endpoint_url`` says so.

Credentials: the static ``access_key_id``/``secret_access_key`` (and
``session_token``) when given; otherwise obstore's own AWS chain: the variables
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, then web
identity, ECS and EC2 instance metadata. Other ``AWS_*`` variables obstore knows
(``AWS_ENDPOINT_URL``, ``AWS_REGION``...) apply to what is not given here.

Time bounds: each HTTP request gives up after ``request_timeout_s`` (connecting
after ``connect_timeout_s``); failed requests (connection errors, 5xx, timeouts
of safe requests) are retried with exponential backoff up to ``max_retries``
times, and no retry starts later than ``request_timeout_s`` after the first
attempt. So an unreachable store fails a call within about twice
``request_timeout_s``; a refused connection (store process dead) within a
second. A multipart upload bounds each part this way, not the whole file.

Memory: ``put_file`` reads the file in ``part_size`` parts with at most
``upload_concurrency`` parts in flight; files up to ``part_size`` go up in one
PUT.

Error mapping (obstore -> ours): ``FileNotFoundError``/``NotFoundError`` (404)
on a read -> `ObjectNotFound` (on a write or a listing a 404 means a missing
bucket: `ObjectStoreError`); every other obstore error (``PermissionDeniedError`` and
``UnauthenticatedError`` for bad credentials, ``GenericError`` for network,
timeouts and other statuses) -> `ObjectStoreError`, with obstore's exception as
``__cause__`` and the first line of its message in ours. A 416 answer to a range
read (start at or past the object's end) is not an error: ``b""``.
"""

from __future__ import annotations

import builtins
import datetime as dt
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import obstore
from obstore.exceptions import BaseError
from obstore.store import S3Store

from broker.tiered.object_store import ObjectNotFound, ObjectStoreError, check_key, check_range

if TYPE_CHECKING:
    from obstore.store import ClientConfig, RetryConfig

MIN_PART_SIZE = 5 * 1024 * 1024
"""S3's smallest multipart part (all but the last)."""
_MESSAGE_CHARS = 300


class S3ObjectStore:
    """One bucket of an S3-compatible store; see the module docstring for addressing, credentials and errors."""

    def __init__(
        self,
        bucket: str,
        *,
        endpoint_url: str | None = None,
        region: str = "us-east-1",
        path_style: bool = True,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        request_timeout_s: float = 30.0,
        connect_timeout_s: float = 5.0,
        max_retries: int = 3,
        part_size: int = 8 * 1024 * 1024,
        upload_concurrency: int = 4,
    ) -> None:
        """`ValueError` for a bad setting (empty bucket, half a key pair, part below 5 MiB, ...)."""
        if not bucket or "/" in bucket:
            raise ValueError(f"bad bucket name {bucket!r}")
        if (access_key_id is None) != (secret_access_key is None):
            raise ValueError("access_key_id and secret_access_key must be given together")
        if part_size < MIN_PART_SIZE:
            raise ValueError(f"part_size {part_size} is below S3's minimum of {MIN_PART_SIZE}")
        if request_timeout_s <= 0 or connect_timeout_s <= 0 or max_retries < 0 or upload_concurrency < 1:
            raise ValueError("timeouts and upload_concurrency must be positive, max_retries at least 0")
        self.bucket = bucket
        self.endpoint_url = endpoint_url
        self._part_size = part_size
        self._concurrency = upload_concurrency
        config: dict[str, Any] = {"region": region, "virtual_hosted_style_request": not path_style}
        if endpoint_url is not None:
            config["endpoint"] = endpoint_url
        if access_key_id is not None:
            config["access_key_id"] = access_key_id
            config["secret_access_key"] = secret_access_key
            if session_token is not None:
                config["session_token"] = session_token
        timeout = dt.timedelta(seconds=request_timeout_s)
        client: ClientConfig = {
            "allow_http": bool(endpoint_url and endpoint_url.lower().startswith("http://")),
            "timeout": timeout,
            "connect_timeout": dt.timedelta(seconds=min(connect_timeout_s, request_timeout_s)),
        }
        retry: RetryConfig = {
            "max_retries": max_retries,
            "retry_timeout": timeout,
            "backoff": {
                "init_backoff": dt.timedelta(milliseconds=100),
                "max_backoff": dt.timedelta(seconds=2),
            },
        }
        self._store: S3Store | None = S3Store(bucket, client_options=client, retry_config=retry, **config)

    def __repr__(self) -> str:
        return f"S3ObjectStore(bucket={self.bucket!r}, endpoint_url={self.endpoint_url!r})"

    def _client(self) -> S3Store:
        if self._store is None:
            raise ObjectStoreError(f"{self!r} is closed")
        return self._store

    def _fail(self, op: str, key: str, exc: Exception, *, read: bool = False) -> NoReturn:
        """Raise ours for obstore's ``exc``: a 404 is `ObjectNotFound` for reads, `ObjectStoreError` otherwise
        (a 404 to a write or a listing means the bucket is missing)."""
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:_MESSAGE_CHARS]
        where = f"s3://{self.bucket}/{key}"
        if read and isinstance(exc, FileNotFoundError):
            raise ObjectNotFound(f"{op} {where}: no such object") from exc
        raise ObjectStoreError(f"{op} {where}: {first_line}") from exc

    async def put(self, key: str, data: bytes | memoryview) -> None:
        check_key(key)
        store = self._client()
        try:
            await obstore.put_async(
                store, key, data, chunk_size=self._part_size, max_concurrency=self._concurrency
            )
        except (BaseError, FileNotFoundError) as exc:
            self._fail("put", key, exc)

    async def put_file(self, key: str, path: Path) -> int:
        check_key(key)
        store = self._client()
        size = os.stat(path).st_size  # a missing or unreadable local file is the caller's OSError
        try:
            await obstore.put_async(
                store, key, Path(path), chunk_size=self._part_size, max_concurrency=self._concurrency
            )
        except BaseError as exc:
            self._fail("put", key, exc)
        except FileNotFoundError as exc:
            if not os.path.exists(path):
                raise  # the local file vanished under the upload
            self._fail("put", key, exc)
        return size

    async def get_range(self, key: str, start: int, end: int) -> bytes | memoryview:
        check_key(key)
        check_range(start, end)
        if start == end:
            return b""
        store = self._client()
        try:
            # obstore's Bytes exports its buffer: a view, not a copy of megabytes
            return memoryview(await obstore.get_range_async(store, key, start=start, end=end))
        except (BaseError, FileNotFoundError) as exc:
            # object_store has no status attribute: 416 is only in the message ("status code: 416").
            if "status code: 416" in str(exc):
                return b""
            self._fail("get_range", key, exc, read=True)

    async def get(self, key: str) -> bytes:
        check_key(key)
        store = self._client()
        try:
            result = await obstore.get_async(store, key)
            return bytes(await result.bytes_async())
        except (BaseError, FileNotFoundError) as exc:
            self._fail("get", key, exc, read=True)

    async def delete(self, key: str) -> None:
        check_key(key)
        store = self._client()
        try:
            await obstore.delete_async(store, key)
        except FileNotFoundError:
            pass  # S3 answers 204 for a missing key; other stores may not
        except BaseError as exc:
            self._fail("delete", key, exc)

    async def list(self, prefix: str) -> builtins.list[str]:
        store = self._client()
        # obstore lists whole path segments ("t/1" does not match "t/10/x"): list from the last
        # complete segment and filter by the string prefix ourselves.
        parent = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        keys: builtins.list[str] = []
        try:
            async for batch in obstore.list(store, prefix=parent or None):
                keys.extend(m["path"] for m in batch if m["path"].startswith(prefix))
        except (BaseError, FileNotFoundError) as exc:
            self._fail("list", prefix, exc)
        return sorted(keys)

    def close(self) -> None:
        """Drop the client; its connections close once no call is in flight."""
        self._store = None
