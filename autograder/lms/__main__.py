"""python -m autograder.lms keygen DIR: the tool's key pair for the LMS's AGS registration.

Writes DIR/lti-tool-key.pem (the private key, 0600: lms.json's private_key_file) and
DIR/lti-tool-jwks.json (the public key set: paste it into the LMS, or serve it at the hub's
/hub/lti13/jwks with tool_jwks_file in lti.json). An existing key is never overwritten.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def keygen(out: Path) -> tuple[Path, Path]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from autograder.lms.ags import tool_jwks

    out.mkdir(parents=True, exist_ok=True)
    key_path, jwks_path = out / "lti-tool-key.pem", out / "lti-tool-jwks.json"
    if key_path.exists():
        raise SystemExit(f"{key_path} exists: keeping it (the LMS knows its public half)")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    text = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(text)
    jwks_path.write_text(json.dumps(tool_jwks(text.decode()), indent=2) + "\n")
    return key_path, jwks_path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m autograder.lms", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    k = sub.add_parser("keygen", help="the tool's key pair for the LMS")
    k.add_argument("dir", type=Path)
    args = p.parse_args(argv)
    key, jwks = keygen(args.dir)
    print(f"private key {key} (lms.json: private_key_file); public key set {jwks} (the LMS's registration)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
