"""Reading HTML pages in tests: forms, their hidden fields, and visible text."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

import httpx


@dataclass
class HtmlForm:
    action: str
    method: str
    fields: dict[str, str] = field(default_factory=dict)
    inputs: list[dict[str, str]] = field(default_factory=list)


class _FormParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[HtmlForm] = []
        self.labels: list[str] = []
        self._label: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append(HtmlForm(a.get("action", ""), a.get("method", "get").lower()))
        elif tag in ("input", "select", "textarea", "button") and self.forms:
            self.forms[-1].inputs.append({"tag": tag, **a})
            if tag == "input" and a.get("type") == "hidden":
                self.forms[-1].fields[a["name"]] = a.get("value", "")
        elif tag == "label":
            self._label = []

    def handle_data(self, data: str) -> None:
        if self._label is not None:
            self._label.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "label" and self._label is not None:
            self.labels.append(" ".join("".join(self._label).split()))
            self._label = None


def forms(html: str) -> list[HtmlForm]:
    parser = _FormParser()
    parser.feed(html)
    return parser.forms


def form(html: str, action: str) -> HtmlForm:
    """The form posting to `action` (exactly one must exist)."""
    found = [f for f in forms(html) if f.action == action]
    assert len(found) == 1, f"{len(found)} forms post to {action}"
    return found[0]


def labels(html: str) -> list[str]:
    parser = _FormParser()
    parser.feed(html)
    return parser.labels


def text(html: str) -> str:
    """Visible text, whitespace collapsed (good enough for assertions)."""
    without_tags = re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style)[^>]*>.*?</\1>", "", html))
    return " ".join(without_tags.replace("&amp;", "&").split())


def assert_html(response: httpx.Response, status: int) -> None:
    assert response.status_code == status, (response.status_code, text(response.text)[:400])
    assert response.headers["content-type"].startswith("text/html")
