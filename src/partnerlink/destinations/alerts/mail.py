"""Handing one email to the SMTP server of PARTNERLINK_SMTP_URL, with the standard
library's smtplib.

`smtp://` starts in clear and switches to TLS (STARTTLS) when the server offers it; it
must when the URL holds a user name, since a password never goes in clear. `smtps://`
speaks TLS from the start. Certificates are checked against the system's authorities
(OpenSSL's default paths: SSL_CERT_FILE names another bundle). Every step waits at most
PARTNERLINK_SMTP_TIMEOUT_SECONDS. A failure is raised as NotSent, in words that never
hold the password.
"""

from __future__ import annotations

import smtplib
import socket
import ssl
from dataclasses import dataclass, field
from email.message import EmailMessage
from functools import cache
from urllib.parse import unquote, urlsplit

SUBMISSION_PORT, IMPLICIT_TLS_PORT = 587, 465
_MAX_WORDS = 300


@dataclass(frozen=True)
class MailServer:
    host: str
    port: int
    implicit_tls: bool
    user: str | None = None
    password: str = field(default="", repr=False)

    @classmethod
    def from_url(cls, url: str) -> MailServer:
        """The server of a URL Settings has checked (smtp:// or smtps://, a host)."""
        parts = urlsplit(url)
        implicit = parts.scheme == "smtps"
        return cls(
            host=parts.hostname or "",
            port=parts.port or (IMPLICIT_TLS_PORT if implicit else SUBMISSION_PORT),
            implicit_tls=implicit,
            user=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password or ""),
        )


class NotSent(Exception):
    """The server did not take the message. `words` say why; `server_down`: any other
    message would fail alike (no connection, refused log-in or sender), so the rest of a
    batch waits for the next try rather than each waiting out its own timeout."""

    def __init__(self, words: str, *, server_down: bool) -> None:
        super().__init__(words)
        self.words = words
        self.server_down = server_down


@cache
def _local_name() -> str:
    """The name given in EHLO: smtplib would look it up on every connection."""
    return socket.getfqdn()


def send(server: MailServer, message: EmailMessage, *, timeout: float) -> None:
    """Sends `message` or raises NotSent. Once the server has taken the message, nothing
    after it (QUIT) can make it count as unsent: it would be sent again."""
    smtp: smtplib.SMTP | None = None
    try:
        smtp = _connect(server, timeout)
        _secure_and_log_in(smtp, server)
        smtp.send_message(message)
    except (smtplib.SMTPException, OSError) as error:
        if smtp is not None:
            smtp.close()
        raise _not_sent(error, server, timeout) from None
    try:
        smtp.quit()
    except (smtplib.SMTPException, OSError):
        smtp.close()


def _connect(server: MailServer, timeout: float) -> smtplib.SMTP:
    if server.implicit_tls:
        return smtplib.SMTP_SSL(
            server.host,
            server.port,
            local_hostname=_local_name(),
            timeout=timeout,
            context=ssl.create_default_context(),
        )
    return smtplib.SMTP(server.host, server.port, local_hostname=_local_name(), timeout=timeout)


def _secure_and_log_in(smtp: smtplib.SMTP, server: MailServer) -> None:
    smtp.ehlo()
    if not server.implicit_tls:
        if smtp.has_extn("starttls"):
            smtp.starttls(context=ssl.create_default_context())
            smtp.ehlo()
        elif server.user:
            raise NotSent(
                "The mail server does not offer STARTTLS, and PartnerLink sends no "
                "password in clear (use smtps:// if it speaks TLS from the start).",
                server_down=True,
            )
    if server.user:
        smtp.login(server.user, server.password)


def _not_sent(error: Exception, server: MailServer, timeout: float) -> NotSent:
    if isinstance(error, NotSent):
        return error
    words, down = _in_words(error, server, timeout)
    if server.password:
        words = words.replace(server.password, "[password]")
    return NotSent(words[:_MAX_WORDS], server_down=down)


def _answer(code: int, text: bytes | str) -> str:
    said = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    return f"{code} {' '.join(said.split())}"


def _in_words(error: Exception, server: MailServer, timeout: float) -> tuple[str, bool]:
    """Why the message was not sent, and whether every other message would fail alike."""
    where = f"{server.host}:{server.port}"
    late = f"The mail server {where} did not answer within {timeout:g} s."
    if isinstance(error, smtplib.SMTPRecipientsRefused):
        answers = "; ".join(_answer(*answer) for answer in error.recipients.values())
        return f"The mail server refused the recipient: {answers}.", False
    if isinstance(error, smtplib.SMTPAuthenticationError):
        return f"The mail server refused the user name and password: {_answer(*error.args)}.", True
    if isinstance(error, smtplib.SMTPSenderRefused):
        return (
            f"The mail server refused the sender: {_answer(error.smtp_code, error.smtp_error)}.",
            True,
        )
    if isinstance(error, smtplib.SMTPResponseException):
        return f"The mail server answered {_answer(error.smtp_code, error.smtp_error)}.", True
    if isinstance(error, smtplib.SMTPServerDisconnected):
        if "timed out" in str(error):
            return late, True
        return f"The mail server {where} closed the connection.", True
    if isinstance(error, smtplib.SMTPException):
        return f"The mail server could not take the message: {error}.", True
    if isinstance(error, TimeoutError):
        return late, True
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"The mail server's certificate was not trusted: {error.verify_message}.", True
    if isinstance(error, ssl.SSLError):
        return f"TLS with the mail server failed: {error.reason or error}.", True
    if isinstance(error, ConnectionRefusedError):
        return f"Nothing answered at {where}: the connection was refused.", True
    if isinstance(error, socket.gaierror):
        return f"The mail server's name {server.host} could not be found.", True
    reason = error.strerror if isinstance(error, OSError) and error.strerror else error
    return f"The mail server {where} could not be reached: {reason}.", True
