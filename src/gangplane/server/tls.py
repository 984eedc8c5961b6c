"""A self-signed serving certificate, made once per state directory.

kubectl (client-go) only sends a kubeconfig's bearer token over TLS, so the server speaks HTTPS even on
localhost. The certificate is its own trust anchor; the kubeconfig carries it as
``certificate-authority-data``.
"""

from __future__ import annotations

import datetime
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=3650)
_LOOPBACK = ("127.0.0.1", "::1", "localhost")

SanName = x509.DNSName | x509.IPAddress


def _san(host: str) -> SanName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def subject_names(host: str) -> list[SanName]:
    hosts = list(_LOOPBACK) + ([host] if host not in _LOOPBACK and host not in ("0.0.0.0", "::") else [])
    return [_san(h) for h in hosts]


def make_certificate(host: str, now: datetime.datetime) -> tuple[bytes, bytes]:
    """PEM certificate and PEM private key for ``host`` (plus the loopback names)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gangplane")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.SubjectAlternativeName(subject_names(host)), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def covers(cert_pem: bytes, host: str) -> bool:
    cert = x509.load_pem_x509_certificate(cert_pem)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return all(n in names for n in subject_names(host))


__all__ = ["covers", "make_certificate", "subject_names"]
