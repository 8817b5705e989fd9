"""A test PKI of Apple's shape, for the benchmarks that sign App Store evidence themselves
(scripts/bench-purchases, scripts/bench-import): a P-384 root and intermediate signing with SHA-384,
as Apple Root CA - G3 and its WWDR intermediate do, the intermediate with marker 1.2.840.113635.100.6.2.1;
a P-256 leaf with 1.2.840.113635.100.6.11.1, valid from 2024 to `leaf_until`. Needs `cryptography`."""
import base64
import datetime
import json


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def es256(key, data):
    """The raw r||s ES256 signature of `data` (bytes) by P-256 `key`, base64url."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
    r, s = decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
    return b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def make_pki(leaf_until=2027):
    """Returns (root PEM, sign(payload) -> compact JWS)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def name(common):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common), x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Bench Inc.")])

    def day(year):
        return datetime.datetime(year, 1, 1, tzinfo=datetime.timezone.utc)

    def certificate(subject, key, issuer, issuer_key, start, end, ca, marker, digest):
        builder = (x509.CertificateBuilder().subject_name(name(subject)).issuer_name(name(issuer)).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(day(start)).not_valid_after(day(end))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca and subject != issuer else None), critical=True)
                   .add_extension(x509.KeyUsage(digital_signature=not ca, content_commitment=False, key_encipherment=False,
                                                data_encipherment=False, key_agreement=False, key_cert_sign=ca, crl_sign=ca,
                                                encipher_only=False, decipher_only=False), critical=True)
                   .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False))
        if marker:
            builder = builder.add_extension(x509.UnrecognizedExtension(x509.ObjectIdentifier(marker), b"\x05\x00"), critical=False)
        return builder.sign(issuer_key, digest)

    # Apple's shape: a P-384 root and intermediate signing with SHA-384, a P-256 leaf for ES256.
    root_key, intermediate_key = ec.generate_private_key(ec.SECP384R1()), ec.generate_private_key(ec.SECP384R1())
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    root = certificate("Bench Root CA", root_key, "Bench Root CA", root_key, 2014, 2039, True, None, hashes.SHA384())
    intermediate = certificate("Bench WWDR CA", intermediate_key, "Bench Root CA", root_key, 2015, 2036, True,
                               "1.2.840.113635.100.6.2.1", hashes.SHA384())
    leaf = certificate("Bench Receipt Signing", leaf_key, "Bench WWDR CA", intermediate_key, 2024, leaf_until, False,
                       "1.2.840.113635.100.6.11.1", hashes.SHA384())
    x5c = [base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode() for cert in (leaf, intermediate, root)]

    header = b64url(json.dumps({"alg": "ES256", "x5c": x5c}).encode())

    def sign(payload):
        data = header + "." + b64url(json.dumps(payload).encode())
        return data + "." + es256(leaf_key, data.encode())

    return root.public_bytes(serialization.Encoding.PEM), sign
