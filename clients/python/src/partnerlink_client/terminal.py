"""`partnerlink-terminal`: a point-of-sale terminal in a text window, for trying an
integration end to end. Pair with the 6-digit code the merchant reads out, ring up
orders item by item, and, when the store has e-receipts on, ask for the customer's
phone on the numpad; the order is sent and the receipt's address shown.

    partnerlink-terminal --url http://127.0.0.1:8000 [--code 482913] [--currency USD]

Reads plain lines from standard input, so it can be driven by a script too.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, TextIO

from partnerlink_client.client import PartnerLinkClient
from partnerlink_client.errors import PartnerLinkError


class Terminal:
    def __init__(
        self,
        client: PartnerLinkClient,
        *,
        currency: str,
        ask: Callable[[str], str],
        out: TextIO,
    ) -> None:
        self.client = client
        self.currency = currency
        self.ask = ask
        self.out = out
        self.receipts_on = False
        self.number = 0

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def pair(self, code: str | None) -> bool:
        while True:
            entered = code or self.ask("Pairing code (6 digits): ").strip()
            code = None
            if not entered:
                return False
            try:
                tokens = self.client.pair(int(entered))
            except (ValueError, PartnerLinkError) as error:
                self.say(f"  not paired: {getattr(error, 'detail', '') or error}")
                continue
            self.say(f"Paired with store {tokens.store_id}.")
            self.receipts_on = bool(self.client.get_store().get("greenInvoices"))
            self.say(
                "E-receipts are on for this store." if self.receipts_on else "E-receipts are off."
            )
            return True

    def ring_up(self) -> bool:
        """One order; False when the cashier is done."""
        items: list[dict[str, Any]] = []
        self.say(
            "New order: an item a line as 'name price' (e.g. 'Flat white 3.50'); empty line ends."
        )
        while True:
            line = self.ask("  item: ").strip()
            if line.lower() in ("q", "quit"):
                return False
            if not line:
                break
            name, _, price = line.rpartition(" ")
            try:
                minor = int(Decimal(price) * 100)
            except InvalidOperation:
                self.say("  write it as: name price")
                continue
            items.append(
                {
                    "itemId": str(len(items) + 1),
                    "itemName": name or "Item",
                    "itemPrice": str(minor),
                    "itemQuantity": 1,
                }
            )
        if not items:
            return False
        phone = ""
        if self.receipts_on:
            phone = "".join(
                ch
                for ch in self.ask("  customer phone for the e-receipt (empty: none): ")
                if ch.isdigit() or ch == "+"
            )
        self.number += 1
        order_id = f"T-{int(time.time())}-{self.number}"
        total = sum(int(item["itemPrice"]) for item in items)
        order: dict[str, Any] = {
            "orderId": order_id,
            "orderPrice": str(total),
            "orderCurrency": self.currency,
            "createdAt": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            "orderDetails": {"orderStatus": "CLOSED", "orderItems": items},
        }
        if phone:
            order["customerPhoneNumber"] = phone
        try:
            self.client.send_order(order)
        except PartnerLinkError as error:
            self.say(f"  refused: {error.detail} {error.errors or ''}".rstrip())
            return True
        self.say(
            f"Order {order_id} sent: {len(items)} item(s), {Decimal(total) / 100:.2f} {self.currency}."
        )
        if phone:
            self.say(
                f"  e-receipt texted to {phone}: {self.client.base_url}/receipts/inv/{order_id}"
                " (the link's key travels only in the text)"
            )
        return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="partnerlink-terminal", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--url", default=os.environ.get("PARTNERLINK_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--code", help="the pairing code (asked for when not given)")
    parser.add_argument("--currency", default="USD")
    args = parser.parse_args(argv)

    def ask(prompt: str) -> str:
        print(prompt, end="", flush=True)
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\n")

    with PartnerLinkClient(args.url) as client:
        terminal = Terminal(client, currency=args.currency, ask=ask, out=sys.stdout)
        try:
            if not terminal.pair(args.code):
                return 1
            while terminal.ring_up():
                pass
        except EOFError:
            pass
    print("Bye.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
