"""An ID token issued for several audiences must name the hub as the party it was issued to
(`azp`, OpenID Connect Core 3.1.3.7): one the provider signed for another client is refused."""

from __future__ import annotations

import pytest

from apps.accounts.models import User
from tests.sso.conftest import sign_in
from tests.sso.test_sign_in import CAROL, signed_in_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("mode", ["azp-missing", "azp-other"])
def test_a_multi_audience_token_not_issued_to_the_hub_is_refused(client, idp, mode):
    idp.accounts(carol=CAROL)
    idp.tamper(mode)  # validly signed: only the audience tells

    response = sign_in(client, "carol")

    assert response.status_code == 403 and b"Sign-in refused" in response.content
    assert signed_in_user(client) is None and not User.objects.exists()


def test_a_multi_audience_token_issued_to_the_hub_signs_in(client, idp):
    idp.accounts(carol=CAROL)
    idp.tamper("azp-ok")

    sign_in(client, "carol")

    assert signed_in_user(client).username == "carol"
