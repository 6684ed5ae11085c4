"""`partners create|update --webhook-url`, `partners rotate-webhook-secret`, `webhooks list`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.cli.conftest import RunCli

PUBLIC = "https://93.184.215.14/partnerlink/hooks"  # a public address: no DNS needed


def test_webhook_secret_is_shown_once_kept_on_update_and_rotated(
    cli: RunCli, cli_json: Callable[..., Any]
) -> None:
    created = cli_json(
        "partners", "create", "--name", "Hooked", "--pos-type", "hooked", "--webhook-url", PUBLIC
    )
    assert created["webhookUrl"] == PUBLIC
    secret = created["webhookSecret"]
    assert secret.startswith("whsec_") and len(secret) > 40
    updated = cli_json("partners", "update", created["clientId"], "--webhook-url", PUBLIC + "/v2")
    assert updated == {"clientId": created["clientId"], "webhookUrl": PUBLIC + "/v2"}
    rotated = cli_json("partners", "rotate-webhook-secret", created["clientId"])
    assert rotated["webhookSecret"].startswith("whsec_") and rotated["webhookSecret"] != secret
    # A partner registered without one gets a secret with its first URL.
    plain = cli_json("partners", "create", "--name", "Plain", "--pos-type", "plain")
    assert "webhookSecret" not in plain
    first = cli_json("partners", "update", plain["clientId"], "--webhook-url", PUBLIC)
    assert first["webhookSecret"].startswith("whsec_")
    listed = cli("partners", "list")
    assert secret not in listed.stdout and rotated["webhookSecret"] not in listed.stdout
    assert cli_json("webhooks", "list") == []
    assert cli_json("webhooks", "list", "--failed") == []


def test_private_or_odd_webhook_urls_are_refused_and_nothing_is_stored(
    cli: RunCli, cli_json: Callable[..., Any]
) -> None:
    for url in ("http://10.0.0.7/hooks", "ftp://pos.example.com"):
        done = cli(
            "partners",
            "create",
            "--name",
            "Bad",
            "--pos-type",
            "bad",
            "--webhook-url",
            url,
            "--json",
        )
        assert done.returncode != 0
        assert json.loads(done.stdout)["code"] == "invalid_field"
    assert cli_json("partners", "list") == []
    unknown = cli("partners", "update", "plk_ci_nobody", "--webhook-url", PUBLIC, "--json")
    assert unknown.returncode != 0 and json.loads(unknown.stdout)["code"] == "unknown_client"
