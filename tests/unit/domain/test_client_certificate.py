"""Reading whose certificate a request came with: the one common name of the subject API Gateway
passes on, compared with the configured one."""

from __future__ import annotations

import pytest

from pipeline.domain.webhook.client_certificate import MalformedSubject, common_names, is_from

META = "client.webhooks.fbclientcerts.com"


@pytest.mark.parametrize(
    ("subject", "names"),
    [
        (f"CN={META},O=Meta Platforms\\, Inc.,L=Menlo Park,ST=California,C=US", (META,)),
        (f"C=US, O=Meta, CN={META}", (META,)),
        (f"cn={META}", (META,)),
        (f"2.5.4.3={META}", (META,)),
        ("O=Example\\2C Inc.,CN=a.example.com+CN=b.example.com", ("a.example.com", "b.example.com")),
        ("O=No Common Name", ()),
    ],
)
def test_common_names_are_read_with_escapes_undone(subject, names):
    assert common_names(subject) == names


@pytest.mark.parametrize("subject", ["CN=a.example.com,garbage", "CN=ends-in\\"])
def test_a_subject_that_is_not_a_distinguished_name_is_refused(subject):
    with pytest.raises(MalformedSubject):
        common_names(subject)


@pytest.mark.parametrize(
    ("subject", "admitted"),
    [
        (f"CN={META},O=Meta Platforms\\, Inc.,C=US", True),
        (f"CN={META.upper()}", True),
        (None, False),
        ("", False),
        ("CN=client.webhooks.fbclientcerts.com.evil.example", False),
        ("CN=evil.example,O=client.webhooks.fbclientcerts.com", False),
        # Two common names: the certificate is not only Meta's
        (f"CN={META}+CN=evil.example", False),
        # An escaped comma keeps the attacker's text inside one value
        (f"CN=evil.example\\,CN={META}", False),
        ("CN=a,broken", False),
    ],
)
def test_only_a_certificate_whose_one_common_name_is_the_expected_one_is_from_it(subject, admitted):
    assert is_from(subject, META) is admitted
