"""The console's Results page in a store owner's words: each class, the holdout and the lift
interval explained where they stand; a period it cannot show keeps the form and says why in
the merchant API's words; and a campaign is added from the page itself, CSRF and all."""

from __future__ import annotations

import html
import math
import re

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.factories import ConnectedStoreFixture
from tests.measurement.test_edges import base
from tests.measurement.test_lift_plan import make_history
from tests.web.conftest import sign_in_console
from tests.web.pages import assert_html, form, text


def page_path(shop: ConnectedStoreFixture) -> str:
    return f"/merchant/profiles/{shop.profile.id}/results"


def words(page_html: str) -> str:
    """The visible text with its character references read (`what's` is `what&#39;s`)."""
    return html.unescape(text(page_html))


def input_value(html: str, name: str) -> str:
    found = re.search(rf'<input[^>]*name="{name}"[^>]*value="([^"]*)"', html)
    assert found, name
    return found.group(1)


def test_every_class_the_holdout_and_the_lift_interval_are_explained_in_place(
    client: TestClient, shop: ConnectedStoreFixture
) -> None:
    sign_in_console(client)
    page = client.get(page_path(shop))
    assert_html(page, 200)
    shown = words(page.text)
    for sentence in (
        "New A customer's first order, placed within a campaign's window after one of your ads"
        " reached them (unless the campaign sets its own, 7 days after a click on the ad, 1 day"
        " after a view).",
        "Returning An order from a customer who had bought before, placed within a campaign's",
        "Organic An order from a customer you know whom none of your ads reached",
        "Anonymous An order without an email or phone number",
        "Holdout: the share of your customers a campaign keeps its ads away from",
        "Lift (95% interval): how many more of every 100 customers bought",
    ):
        assert sentence in shown, sentence
    assert "/merchant/api" not in shown  # the empty state sends nobody to the API any more
    assert page.headers["content-security-policy"] and page.headers["x-frame-options"] == "DENY"


def test_dates_it_cannot_show_keep_the_form_and_say_why_in_the_apis_words(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    sign_in_console(client)
    for query, typed in (
        ({"from": "2024-05-10", "to": "2024-05-01"}, ("2024-05-10", "2024-05-01")),
        ({"from": "2024-01-01", "to": "9999-12-31"}, ("2024-01-01", "9999-12-31")),
        ({"from": "2024-13-01", "to": "2024-05-01"}, ("2024-13-01", "2024-05-01")),
    ):
        page = client.get(page_path(shop), params=query)
        assert_html(page, 400)
        assert (input_value(page.text, "from"), input_value(page.text, "to")) == typed
        problem = client.get(f"{base(shop)}/results", params=query, headers=owner).json()
        assert problem["code"] == "invalid_field"
        shown = words(page.text)
        assert "That did not work" not in shown
        if query["from"] != "2024-13-01":  # there the API says only "from: is not valid"
            assert f"These dates cannot be shown: {problem['detail']}." in shown, shown
        else:
            assert "from must be a date from 2000-01-01 to 2999-12-31" in shown
        assert 'aria-invalid="true"' in page.text
        assert form(page.text, f"{page_path(shop)}/campaigns").fields["csrf_token"]


def test_a_campaign_is_added_from_the_results_page_as_the_api_adds_one(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    sign_in_console(client)
    action = f"{page_path(shop)}/campaigns"
    fields = form(client.get(page_path(shop)).text, action).fields
    typed = {"name": "Spring sale", "starts_on": "2024-05-01", "ends_on": "2024-05-28"}

    forged = client.post(action, data={**typed, "csrf_token": "forged"})
    assert_html(forged, 403)
    assert_html(client.post(action, data=typed), 403)
    added = client.post(
        action, data={**fields, **typed, "holdout_percent": "10"}, follow_redirects=False
    )
    assert added.status_code == 303, added.text
    assert added.headers["location"] == f"{page_path(shop)}?done=campaign-added"
    assert "Campaign added." in words(client.get(added.headers["location"]).text)

    campaigns = client.get(f"{base(shop)}/campaigns", headers=owner).json()["campaigns"]
    assert [
        (c["campaignId"], c["name"], c["startsAt"], c["endsAt"], c["holdoutPercent"])
        for c in campaigns
    ] == [
        ("spring-sale", "Spring sale", "2024-05-01T00:00:00+00:00", "2024-05-29T00:00:00+00:00", 10)
    ]
    again = client.post(action, data={**fields, **typed})
    assert_html(again, 400)
    assert "You already have a campaign with this ID" in words(again.text)


def test_every_problem_of_the_campaign_form_is_shown_at_once_with_what_was_typed(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    sign_in_console(client)
    action = f"{page_path(shop)}/campaigns"
    fields = form(client.get(page_path(shop)).text, action).fields
    typed = {
        "name": "   ",
        "campaign_id": "spring sale!",
        "starts_on": "2024-05-10",
        "ends_on": "2024-05-01",
        "holdout_percent": "80",
    }
    refused = client.post(action, data={**fields, **typed})
    assert_html(refused, 400)
    shown = words(refused.text)
    for message in (
        "Enter the campaign's name",
        "Use up to 64 letters, digits",
        "Enter a whole number from 0 to 50.",
    ):
        assert message in shown, message
    assert input_value(refused.text, "campaign_id") == "spring sale!"
    assert input_value(refused.text, "holdout_percent") == "80"
    assert refused.text.count('aria-invalid="true"') == 3

    backwards = {**typed, "name": "Spring", "campaign_id": "", "holdout_percent": "5"}
    refused = client.post(action, data={**fields, **backwards})
    assert_html(refused, 400)
    assert "The last day must be on or after the first." in words(refused.text)
    assert client.get(f"{base(shop)}/campaigns", headers=owner).json()["campaigns"] == []


def test_the_campaign_form_sets_the_windows_with_the_platforms_defaults_named(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    sign_in_console(client)
    page = client.get(page_path(shop))
    assert (
        input_value(page.text, "click_window_days"),
        input_value(page.text, "view_window_days"),
    ) == (
        "7",
        "1",
    )
    shown = words(page.text)
    assert "Meta counts 7 days by default (or 1), Google's store sales 30." in shown
    assert "Meta counts 1 day by default." in shown
    action = f"{page_path(shop)}/campaigns"
    fields = form(page.text, action).fields
    typed = {"name": "Search", "starts_on": "2024-05-01", "click_window_days": "30"}
    added = client.post(
        action, data={**fields, **typed, "view_window_days": "0"}, follow_redirects=False
    )
    assert added.status_code == 303, added.text
    campaign = client.get(f"{base(shop)}/campaigns", headers=owner).json()["campaigns"][0]
    assert (campaign["clickWindowDays"], campaign["viewWindowDays"]) == (30, 0)
    refused = client.post(
        action, data={**fields, **typed, "name": "Other", "click_window_days": "91"}
    )
    assert_html(refused, 400)
    assert "Enter a whole number of days from 1 to 90." in words(refused.text)


def test_the_planner_says_in_one_sentence_what_a_test_could_tell(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    sign_in_console(client)
    assert "Once you have 100 customers and 28 days of orders" in words(
        client.get(page_path(shop)).text
    )
    make_history(session, shop, 2000)
    plan = client.get(f"{base(shop)}/lift-plan?holdoutPercent=20&days=35", headers=owner).json()
    percent = math.ceil(round(plan["minimumDetectableLift"]["relative"] * 100, 6))
    page = client.get(page_path(shop), params={"plan_holdout": "20", "plan_days": "35"})
    assert_html(page, 200)
    assert f"With a 20% holdout for 35 days, you can tell a lift of {percent}% or more." in words(
        page.text
    )
    odd = client.get(page_path(shop), params={"plan_holdout": "60", "plan_days": "35"})
    assert "Enter a holdout from 1 to 50%" in words(odd.text)
