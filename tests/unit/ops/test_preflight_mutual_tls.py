"""`preflight` with mutual TLS on: the ACM certificate issued and covering the domain, the
truststore object there and holding certificates; each missing piece fails with what to do."""

from __future__ import annotations

import datetime
from dataclasses import replace

import boto3
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ops.aws import Aws, Target
from ops.commands.preflight import FAIL, PASS, SKIP, check_mutual_tls
from ops.context import Context
from ops.output import Console
from stacks.config.environments import ENVIRONMENTS
from stacks.config.mutual_tls import MutualTlsConfig
from tests.support.aws import REGION

BUCKET = "example-truststores"
KEY = "meta/truststore.pem"


def _certificate(*names: str) -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
        .sign(key, hashes.SHA256())
    )
    pem_key = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return certificate.public_bytes(serialization.Encoding.PEM), pem_key


def _imported(*names: str) -> str:
    certificate, key = _certificate(*names)
    acm = boto3.client("acm", region_name=REGION)
    return acm.import_certificate(Certificate=certificate, PrivateKey=key)["CertificateArn"]


def _truststore(body: bytes) -> None:
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=body)


def _check(certificate_arn: str) -> object:
    config = MutualTlsConfig(
        domain_name="hooks.example.com", certificate_arn=certificate_arn, truststore_uri=f"s3://{BUCKET}/{KEY}"
    )
    return check_mutual_tls(_context(replace(ENVIRONMENTS["prod"], mutual_tls=config)))


def _context(env) -> Context:
    target = Target(env=env, region=REGION)
    return Context(env=env, target=target, aws=Aws(target), console=Console())


CA_BUNDLE = _certificate("ca-one.example")[0] + _certificate("ca-two.example")[0]


def test_an_issued_certificate_and_a_truststore_of_certificates_pass(aws):
    arn = _imported("hooks.example.com")
    _truststore(CA_BUNDLE)

    result = _check(arn)

    assert (result.status, result.detail) == (
        PASS,
        f"hooks.example.com: certificate issued; truststore s3://{BUCKET}/{KEY} holds 2 certificate(s); the door "
        "admits only CN=client.webhooks.fbclientcerts.com",
    )


def test_a_wildcard_certificate_covers_one_label(aws):
    _truststore(CA_BUNDLE)

    assert _check(_imported("*.example.com")).status == PASS
    assert _check(_imported("*.hooks.example.com")).status == FAIL


def test_a_certificate_for_another_name_fails_naming_what_it_covers(aws):
    _truststore(CA_BUNDLE)

    result = _check(_imported("api.example.com"))

    assert result.status == FAIL
    assert "does not cover hooks.example.com (it names api.example.com)" in result.detail


def test_a_certificate_still_pending_validation_fails(aws):
    _truststore(CA_BUNDLE)
    acm = boto3.client("acm", region_name=REGION)
    arn = acm.request_certificate(DomainName="hooks.example.com", ValidationMethod="DNS")["CertificateArn"]

    result = _check(arn)

    assert result.status == FAIL
    assert "is PENDING_VALIDATION, not ISSUED: finish its validation" in result.detail


def test_a_certificate_that_does_not_exist_fails(aws):
    _truststore(CA_BUNDLE)

    result = _check("arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d")

    assert result.status == FAIL
    assert result.detail.startswith("cannot read certificate arn:aws:acm:us-east-1:123456789012:certificate/")


@pytest.mark.parametrize(
    ("truststore", "says"),
    [
        (None, "cannot read the truststore s3://example-truststores/meta/truststore.pem"),
        (b"not a certificate\n", "holds no PEM certificate: upload the CA chain"),
    ],
)
def test_a_missing_or_empty_truststore_fails(aws, truststore, says):
    arn = _imported("hooks.example.com")
    if truststore is None:
        boto3.client("s3", region_name=REGION).create_bucket(Bucket=BUCKET)
    else:
        _truststore(truststore)

    result = _check(arn)

    assert result.status == FAIL
    assert says in result.detail


def test_off_it_is_skipped(aws):
    result = check_mutual_tls(_context(ENVIRONMENTS["prod"]))

    assert (result.status, result.detail) == (SKIP, "off in prod")
