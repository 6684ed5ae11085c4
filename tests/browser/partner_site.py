"""A partner's web page on another origin, embedding the consent screen in an IFrame."""

from __future__ import annotations

import html
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Acme POS back office</title>
<style>
body {{ font: 15px/1.5 system-ui, sans-serif; margin: 0; background: #0f172a; color: #e2e8f0; }}
header {{ padding: 14px 24px; background: #1e293b; font-weight: 700; }}
main {{ display: flex; gap: 32px; padding: 24px; align-items: flex-start; }}
aside {{ max-width: 260px; }}
iframe {{ border: 0; border-radius: 12px; background: #fff; }}
</style></head>
<body><header>Acme POS · Settings › Marketing</header>
<main><aside><h2>Connect PartnerLink</h2>
<p>Sign in to PartnerLink to send your sales and customers to your ad account.</p></aside>
<iframe src="{src}" width="{width}" height="{height}" title="Connect PartnerLink"></iframe>
</main></body></html>"""


class _PartnerPage(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        query = parse_qs(urlsplit(self.path).query)
        body = PAGE.format(
            src=html.escape(query.get("src", ["about:blank"])[0], quote=True),
            width=int(query.get("w", ["400"])[0]),
            height=int(query.get("h", ["600"])[0]),
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:  # keep test output quiet
        pass


@contextmanager
def partner_site() -> Iterator[str]:
    """Serves the partner page; yields its origin, `http://localhost:<port>`.

    The app runs at 127.0.0.1, so `localhost` makes the IFrame cross-site, as
    on a real partner's page: no cookie of ours would reach the framed screen.
    """
    server = ThreadingHTTPServer(("127.0.0.1", 0), _PartnerPage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://localhost:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
