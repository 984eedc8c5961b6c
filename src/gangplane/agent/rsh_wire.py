"""The remote-shell wire format: framed stdio over a Unix stream socket, and the key check that stands in for
SSH public-key authentication.

A session is: the server sends ``CHALLENGE`` (32 random bytes); the client answers ``HELLO`` (JSON: the
command words and an ECDSA signature of the challenge made with the private key the job's SSH Secret mounts);
then ``STDIN``/``STDIN_EOF`` flow to the server and ``STDOUT``/``STDERR`` back, until the server sends
``EXIT`` (JSON: the command's exit code). Each frame is one type byte, a 4-byte big-endian length and the
payload. A connection that closes before ``EXIT`` means the session is over: the server kills the command,
the client exits 255 as ``ssh`` does when the connection is lost.

Keys are the files of the Secret ``MPI`` mounts (``runtime/plugins/mpi.py``): ``id_rsa`` (a PEM private key)
on the client, ``authorized_keys`` (OpenSSH public keys) on the server, so only pods that mount the job's
Secret can run commands in its pods, as with ``sshd``.
"""

from __future__ import annotations

import base64
import json
import socket
import struct
import threading
from enum import IntEnum
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization as ser
from cryptography.hazmat.primitives.asymmetric import ec

PRIVATE_KEY_FILE, AUTHORIZED_KEYS_FILE = "id_rsa", "authorized_keys"
CHALLENGE_BYTES = 32
MAX_FRAME = 1 << 20
_HEADER = struct.Struct(">BI")


class Frame(IntEnum):
    CHALLENGE = 1
    HELLO = 2
    STDIN = 3
    STDIN_EOF = 4
    STDOUT = 5
    STDERR = 6
    EXIT = 7


class WireError(Exception):
    """The peer broke the protocol or the connection ended."""


class Channel:
    """One end of a session: whole frames in, whole frames out (writes are serialised across threads)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._write = threading.Lock()

    def send(self, kind: Frame, payload: bytes = b"") -> None:
        with self._write:
            self.sock.sendall(_HEADER.pack(kind, len(payload)) + payload)

    def send_json(self, kind: Frame, value: Any) -> None:
        self.send(kind, json.dumps(value).encode())

    def receive(self) -> tuple[Frame, bytes]:
        """The next frame; ``WireError`` when the connection ends or the frame is malformed."""
        kind, size = _HEADER.unpack(self._exactly(_HEADER.size))
        if size > MAX_FRAME or kind not in Frame._value2member_map_:
            raise WireError(f"bad frame (type {kind}, {size} bytes)")
        return Frame(kind), self._exactly(size)

    def _exactly(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            chunk = self.sock.recv(min(left, 65536))
            if not chunk:
                raise WireError("connection closed")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self.sock.close()


def sign(challenge: bytes, keys_dir: Path) -> str:
    """The challenge signed with ``keys_dir/id_rsa`` (base64), as the client proves it holds the job's key."""
    key = ser.load_pem_private_key((keys_dir / PRIVATE_KEY_FILE).read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(
            f"{keys_dir / PRIVATE_KEY_FILE}: only ECDSA keys are supported (the MPI Secret's type)"
        )
    return base64.b64encode(key.sign(challenge, ec.ECDSA(hashes.SHA256()))).decode()


def verify(challenge: bytes, signature: str, keys_dir: Path) -> bool:
    """Whether ``signature`` of ``challenge`` verifies with one of ``keys_dir/authorized_keys``."""
    try:
        raw = base64.b64decode(signature, validate=True)
        lines = (keys_dir / AUTHORIZED_KEYS_FILE).read_text().splitlines()
    except (ValueError, OSError):
        return False
    for line in lines:
        try:
            key = ser.load_ssh_public_key(line.strip().encode())
        except (ValueError, TypeError):
            continue
        if isinstance(key, ec.EllipticCurvePublicKey) and _verifies(key, raw, challenge):
            return True
    return False


def _verifies(key: ec.EllipticCurvePublicKey, signature: bytes, challenge: bytes) -> bool:
    try:
        key.verify(signature, challenge, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return False
    return True
