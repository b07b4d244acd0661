"""Password configs in ZooKeeper, encrypted the way Kafka's brokers keep them.

Kafka (EncryptingPasswordEncoder, DynamicBrokerConfig.toPersistentProps) never
writes a dynamic password config (``listener.name.<l>.ssl.keystore.password``...)
to ZooKeeper in the clear: it stores a comma-separated map

    keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/CBC/PKCS5Padding,keyLength:128,
    salt:<base64 of 256 random bytes>,iterations:4096,encryptedPassword:<base64>,passwordLength:<n>,
    initializationVector:<base64>

(``AES/GCM/NoPadding`` adds ``authenticationTagLength``), the key derived from
the broker's ``password.encoder.secret`` with PBKDF2 over the secret's UTF-8
bytes. Without that secret a ZooKeeper-mode broker refuses to store one
("Password encoder secret not configured"). Settings, as Kafka's:
``password.encoder.secret``, ``password.encoder.old.secret`` (values written
with the previous secret still decode), ``password.encoder.cipher.algorithm``,
``password.encoder.key.length``, ``password.encoder.iterations``,
``password.encoder.keyfactory.algorithm``. A single broker keeps its configs in
its own data directory (mode 0600) and stores passwords as they are, as
Kafka's KRaft brokers do in their metadata log.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Mapping

from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

_HASHES = {
    "PBKDF2WithHmacSHA512": hashes.SHA512,
    "PBKDF2WithHmacSHA256": hashes.SHA256,
    "PBKDF2WithHmacSHA1": hashes.SHA1,
}
CBC, GCM = "AES/CBC/PKCS5Padding", "AES/GCM/NoPadding"


class PasswordError(ValueError):
    """A password that cannot be encoded (no secret) or decoded (wrong secret, damaged value)."""


class PasswordEncoder:
    def __init__(
        self,
        secret: str,
        old_secret: str | None = None,
        cipher: str = CBC,
        key_length: int = 128,
        iterations: int = 4096,
        key_factory: str = "PBKDF2WithHmacSHA512",
    ) -> None:
        if cipher not in (CBC, GCM):
            raise ValueError(
                f"password.encoder.cipher.algorithm {cipher!r}: minikafka supports {CBC} and {GCM}"
            )
        if key_factory not in _HASHES:
            raise ValueError(f"password.encoder.keyfactory.algorithm {key_factory!r} is not supported")
        if key_length not in (128, 192, 256):
            raise ValueError("password.encoder.key.length must be 128, 192 or 256 for AES")
        self._secret, self._old = secret, old_secret
        self._cipher, self._key_length, self._iterations, self._factory = (
            cipher,
            key_length,
            iterations,
            key_factory,
        )

    @classmethod
    def from_values(cls, values: Mapping[str, str]) -> PasswordEncoder | None:
        """The encoder of a broker's static ``password.encoder.*`` values; None without a secret."""
        secret = values.get("password.encoder.secret")
        if not secret:
            return None
        return cls(
            secret,
            values.get("password.encoder.old.secret") or None,
            values.get("password.encoder.cipher.algorithm", CBC).strip(),
            int(values.get("password.encoder.key.length", "128")),
            int(values.get("password.encoder.iterations", "4096")),
            (values.get("password.encoder.keyfactory.algorithm") or "PBKDF2WithHmacSHA512").strip(),
        )

    def _key(self, secret: str, factory: str, salt: bytes, iterations: int, length: int) -> bytes:
        kdf = PBKDF2HMAC(_HASHES[factory](), length // 8, salt, iterations)
        return kdf.derive(secret.encode())

    def encode(self, password: str) -> str:
        salt = secrets.token_bytes(256)
        key = self._key(self._secret, self._factory, salt, self._iterations, self._key_length)
        plain = password.encode()
        fields = {
            "keyFactoryAlgorithm": self._factory,
            "cipherAlgorithm": self._cipher,
            "keyLength": str(self._key_length),
            "salt": _b64(salt),
            "iterations": str(self._iterations),
        }
        if self._cipher == GCM:
            iv = secrets.token_bytes(12)
            encrypted = AESGCM(key).encrypt(iv, plain, None)
            fields["authenticationTagLength"] = "128"
        else:
            iv = secrets.token_bytes(16)
            padder = padding.PKCS7(128).padder()
            encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
            encrypted = encryptor.update(padder.update(plain) + padder.finalize()) + encryptor.finalize()
        fields["encryptedPassword"] = _b64(encrypted)
        fields["passwordLength"] = str(len(password.encode("utf-16-le")) // 2)  # Java's String.length()
        fields["initializationVector"] = _b64(iv)
        return ",".join(f"{k}:{v}" for k, v in fields.items())

    def decode(self, encoded: str) -> str:
        """The password; PasswordError when neither the secret nor the old secret opens it."""
        for secret in (self._secret, self._old):
            if secret is None:
                continue
            try:
                return self._decode(secret, encoded)
            except (ValueError, KeyError):
                continue
        raise PasswordError("Password could not be decoded")

    def _decode(self, secret: str, encoded: str) -> str:
        params = dict(item.strip().split(":", 1) for item in encoded.split(",") if item.strip())
        factory = params.get("keyFactoryAlgorithm", "PBKDF2WithHmacSHA512")
        if factory not in _HASHES:
            raise ValueError(factory)
        key = self._key(
            secret, factory, _unb64(params["salt"]), int(params["iterations"]), int(params["keyLength"])
        )
        iv, data = _unb64(params["initializationVector"]), _unb64(params["encryptedPassword"])
        if params["cipherAlgorithm"] == GCM:
            try:
                plain = AESGCM(key).decrypt(iv, data, None)
            except Exception as exc:  # InvalidTag: another secret
                raise ValueError("wrong secret") from exc
        else:
            decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
            unpadder = padding.PKCS7(128).unpadder()
            plain = unpadder.update(decryptor.update(data) + decryptor.finalize()) + unpadder.finalize()
        password = plain.decode()
        if len(password.encode("utf-16-le")) // 2 != int(params["passwordLength"]):
            raise ValueError("length check failed")
        return password


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.strip(), validate=True)
