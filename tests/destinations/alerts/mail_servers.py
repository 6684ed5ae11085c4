"""Real SMTP servers on 127.0.0.1 for the alerts' tests: aiosmtpd's, in a thread, in
clear, with STARTTLS and log-in, or with TLS from the start (a self-signed certificate
made here, trusted through SSL_CERT_FILE); and a server that accepts connections and
never answers."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import socket
import ssl
import threading
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.conftest import free_port

USER, PASSWORD = "alerts", "s3cret-smtp-pass@word"


@dataclass
class Received:
    sender: str
    recipients: list[str]
    message: EmailMessage
    over_tls: bool
    logged_in: bool


@dataclass
class Recorder:
    """An aiosmtpd handler: keeps every message, or refuses it (`refusal`: an SMTP
    answer such as "550 5.1.1 No such mailbox" given to RCPT) and may wait before taking
    one (`delay`)."""

    refusal: str | None = None
    delay: float = 0.0
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        if self.refusal:
            return self.refusal
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.delay:
            await asyncio.sleep(self.delay)
        message = message_from_bytes(envelope.original_content, policy=policy.default)
        assert isinstance(message, EmailMessage)
        with self.lock:
            self.received.append(
                Received(
                    envelope.mail_from,
                    list(envelope.rcpt_tos),
                    message,
                    over_tls=server.transport.get_extra_info("sslcontext") is not None,
                    logged_in=bool(session.authenticated),
                )
            )
        return "250 Message accepted"

    @property
    def messages(self) -> list[EmailMessage]:
        with self.lock:
            return [r.message for r in self.received]


class Running:
    """Started on entering the block, stopped on leaving it."""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class MailServer(Running):
    """aiosmtpd on a free port; `url` is PARTNERLINK_SMTP_URL for it."""

    def __init__(self, *, scheme: str = "smtp", userinfo: str = "", **smtp: Any) -> None:
        self.recorder = Recorder()
        self.port = free_port()
        self.url = f"{scheme}://{userinfo}127.0.0.1:{self.port}"
        self.controller = Controller(self.recorder, hostname="127.0.0.1", port=self.port, **smtp)

    def start(self) -> None:
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()


def _log_in(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
    good = isinstance(data, LoginPassword) and (data.login, data.password) == (
        USER.encode(),
        PASSWORD.encode(),
    )
    return AuthResult(success=good, handled=False)  # handled=False: the server answers 535


def starttls_server(tls: ssl.SSLContext, userinfo: str) -> MailServer:
    """STARTTLS required before anything else, then log-in required (as a provider's
    submission port on 587 is)."""
    return MailServer(
        userinfo=userinfo,
        tls_context=tls,
        require_starttls=True,
        auth_required=True,
        auth_require_tls=True,
        authenticator=_log_in,
    )


def smtps_server(tls: ssl.SSLContext) -> MailServer:
    return MailServer(scheme="smtps", ssl_context=tls)


def self_signed(folder: Path) -> tuple[ssl.SSLContext, Path]:
    """A server TLS context for 127.0.0.1, and the certificate's file for SSL_CERT_FILE."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "smtp-cert.pem", folder / "smtp-key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return context, cert_file


class SilentServer(Running):
    """Accepts connections and never says a word (not even SMTP's greeting)."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.url = f"smtp://127.0.0.1:{self.listener.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.held.append(connection)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() waiting on it
        self.listener.close()
        self.thread.join(timeout=5)
        for connection in self.held:
            connection.close()
