"""The deployment's certificates: a CA, the host's certificate it signs, their expiry and renewal.

A host certificate lasts ``HOST_DAYS`` (825 days, the most clients commonly accept); the CA lasts ten
years and its key stays in the credentials directory (``ca.key``, owner only) so that
``handoffs credentials renew DIR`` can sign a new host certificate that every worker and front end
already trusts: only the host restarts. The host warns from ``WARN_DAYS`` before its certificate
expires, and refuses to start with an expired one.

Example::

    ca_key, ca_cert = new_ca(now)
    host_key, host_cert = new_host_certificate(ca_key, ca_cert, ["localhost"], now)
"""

from __future__ import annotations

import datetime
import ipaddress
import re
from collections.abc import Sequence

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

HOST_DAYS = 825
CA_DAYS = 3650
WARN_DAYS = 30
"""How long before its certificate expires the host starts warning (at start, then daily)."""

MAX_NAMES = 100
"""Names in one host certificate: a deployment's host has a few; more is a mistake or not ours."""
_DNS_LABEL = re.compile(r"^(?!-)[A-Za-z0-9_-]{1,63}(?<!-)$")

_CA_NAME = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "handoffs-runtime deployment CA")])


KeyAndCertificate = tuple[ec.EllipticCurvePrivateKey, x509.Certificate]


def new_ca(now: datetime.datetime, days: int = CA_DAYS) -> KeyAndCertificate:
    """A fresh CA key and its self-signed certificate, valid from ``now`` for ``days``."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(_CA_NAME, _CA_NAME, key.public_key(), now, days)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(signs_certificates=True), critical=True)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def new_host_certificate(
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    names: Sequence[str],
    now: datetime.datetime,
    days: int = HOST_DAYS,
) -> KeyAndCertificate:
    """A fresh host key and its certificate signed by the CA, naming ``names`` (DNS names or IPs);
    it never outlives the CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    lasts = min(datetime.timedelta(days=days), ca_cert.not_valid_after_utc - now)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    cert = (
        _builder(subject, ca_cert.subject, key.public_key(), now, lasts.days)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(signs_certificates=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([_general_name(n) for n in names]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def names_of(cert: x509.Certificate) -> list[str]:
    """The DNS names and IP addresses a host certificate names (to renew it with the same ones)."""
    try:
        alternatives = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    ips = [str(ip) for ip in alternatives.get_values_for_type(x509.IPAddress)]
    return [*alternatives.get_values_for_type(x509.DNSName), *ips]


def check_host_names(names: Sequence[str]) -> None:
    """Raise ``ValueError`` (one line) for names a host certificate of ours may not hold: a wildcard,
    which would vouch for hosts nobody named, or anything neither a DNS name nor an IP address."""
    if len(names) > MAX_NAMES:
        raise ValueError(f"{len(names)} names are more than a host needs (at most {MAX_NAMES})")
    for name in names:
        try:
            ipaddress.ip_address(name.strip("[]"))
            continue
        except ValueError:
            pass
        if "*" in name:
            raise ValueError(f"{name!r} is a wildcard: name each host the certificate is for")
        labels = name.removesuffix(".").split(".")
        if len(name) > 253 or not all(_DNS_LABEL.match(label) for label in labels):
            raise ValueError(f"{name!r} is neither a DNS name nor an IP address")


def check_host_profile(cert: x509.Certificate, ca_cert: x509.Certificate) -> None:
    """Raise ``ValueError`` saying how ``cert`` differs from a host certificate this project makes with
    the CA ``ca_cert``: signed by it, not a CA itself, at most ``HOST_DAYS`` long, plain names only."""
    try:
        cert.verify_directly_issued_by(ca_cert)
    except (ValueError, TypeError, InvalidSignature):
        raise ValueError("it is not signed by the CA in the same folder") from None
    try:
        is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    if is_ca:
        raise ValueError("it is a CA certificate, not a host's")
    if lifetime_days(cert) > HOST_DAYS:
        raise ValueError(f"it was made to last {lifetime_days(cert)} days, more than {HOST_DAYS}")
    check_host_names(names_of(cert))


def lifetime_days(cert: x509.Certificate) -> int:
    """How many whole days ``cert`` was made to last (at least one)."""
    return max((cert.not_valid_after_utc - cert.not_valid_before_utc).days, 1)


def expires(pem: bytes) -> datetime.datetime:
    """When the (first) certificate in ``pem`` expires, in UTC."""
    return x509.load_pem_x509_certificate(pem).not_valid_after_utc


def begins(pem: bytes) -> datetime.datetime:
    """When the (first) certificate in ``pem`` becomes valid, in UTC (a clock behind it: clients refuse)."""
    return x509.load_pem_x509_certificate(pem).not_valid_before_utc


def day(moment: datetime.datetime) -> str:
    """A date as people read it in a message: ``2025-03-01``."""
    return moment.date().isoformat()


def pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePublicKey, now: datetime.datetime, days: int
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
    )


_UNUSED_KEY_USES = dict.fromkeys(
    (
        "content_commitment",
        "key_encipherment",
        "data_encipherment",
        "key_agreement",
        "encipher_only",
        "decipher_only",
    ),
    False,
)


def _key_usage(*, signs_certificates: bool) -> x509.KeyUsage:
    """Signatures only (TLS with an EC key needs no encipherment); a CA's also sign certificates and CRLs."""
    return x509.KeyUsage(
        digital_signature=True,
        key_cert_sign=signs_certificates,
        crl_sign=signs_certificates,
        **_UNUSED_KEY_USES,
    )


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name.strip("[]")))
    except ValueError:
        return x509.DNSName(name)
