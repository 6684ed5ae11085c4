"""The bare address: a person's browser is sent to the console (whose sign-in page links the
API reference); a program keeps the 403 problem body every path outside /v1 answers."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from partnerlink.web.negotiation import prefers_html
from tests.web.pages import assert_html

FIREFOX = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def test_a_browser_opening_the_bare_address_is_sent_to_the_console(client: TestClient) -> None:
    for method in ("GET", "HEAD"):
        answer = client.request(method, "/", headers={"Accept": FIREFOX}, follow_redirects=False)
        assert answer.status_code == 303, answer.text
        assert answer.headers["location"] == "/merchant"
    signin = client.get("/", headers={"Accept": FIREFOX})
    assert_html(signin, 200)
    assert 'href="/docs"' in signin.text and 'action="/merchant/signin"' in signin.text


@pytest.mark.parametrize(
    ("method", "path", "accept"),
    [
        ("GET", "/", "*/*"),
        ("GET", "/", ""),
        ("GET", "/", "application/json"),
        ("GET", "/", "application/json, text/html;q=0.5"),
        ("POST", "/", FIREFOX),
        ("GET", "/stores", FIREFOX),
    ],
)
def test_programs_and_other_paths_keep_the_403_problem(
    client: TestClient, method: str, path: str, accept: str
) -> None:
    answer = client.request(method, path, headers={"Accept": accept}, follow_redirects=False)
    assert answer.status_code == 403, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert answer.json()["code"] == "missing_version_prefix"


def test_html_is_preferred_only_when_named_and_ranked_first() -> None:
    assert prefers_html("text/html")
    assert prefers_html(FIREFOX)
    assert prefers_html("application/json;q=0.5, text/html")
    assert not prefers_html("*/*")
    assert not prefers_html("text/*")
    assert not prefers_html("text/html;q=0")
    assert not prefers_html("text/html;q=oops")
    assert not prefers_html("application/problem+json, text/html;q=0.9")
