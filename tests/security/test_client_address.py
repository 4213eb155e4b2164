"""Which address a request is counted under: the socket's, unless the operator says how many
proxies in front append to X-Forwarded-For; then the one the outermost trusted proxy saw."""

from __future__ import annotations

import pytest

from apps.core.client_address import client_address


@pytest.mark.parametrize(
    "forwarded", [[], ["198.51.100.7"], ["198.51.100.7, 192.0.2.1"], ["garbage"]]
)
def test_without_a_trusted_proxy_the_header_is_ignored(forwarded, settings):
    settings.MCPHUB_TRUSTED_PROXIES = 0

    assert client_address("203.0.113.9", forwarded) == "203.0.113.9"


@pytest.mark.parametrize(
    ("trusted", "forwarded", "expected"),
    [
        (1, ["198.51.100.7"], "198.51.100.7"),
        (
            1,
            ["1.2.3.4, 198.51.100.7"],
            "198.51.100.7",
        ),  # the client's own entry on the left is not believed
        (1, ["1.2.3.4", "198.51.100.7"], "198.51.100.7"),  # two header lines are one list
        (
            2,
            ["1.2.3.4, 198.51.100.7, 10.0.0.3"],
            "198.51.100.7",
        ),  # the outer proxy saw 198.51.100.7
        (2, ["198.51.100.7"], "10.0.0.1"),  # it did not pass both proxies: only the socket is known
        (1, [], "10.0.0.1"),
        (1, ["not-an-address"], "10.0.0.1"),
        (1, ["2001:db8::1"], "2001:db8::1"),
    ],
)
def test_behind_trusted_proxies_the_right_hop_counts(trusted, forwarded, expected, settings):
    settings.MCPHUB_TRUSTED_PROXIES = trusted

    assert client_address("10.0.0.1", forwarded) == expected
