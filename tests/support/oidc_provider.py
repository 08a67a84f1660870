"""A real OpenID Connect provider for tests (``oidc-provider-mock``, served over HTTP on a
loopback port in a thread), and the sign-in a browser would make against it."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import oidc_provider_mock
import requests

CLIENT_ID = "occ-tests"
CLIENT_SECRET = "occ-tests-client-secret"


@dataclass(frozen=True)
class Provider:
    """The running provider: its issuer and discovery URL."""

    issuer: str

    @property
    def discovery_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    def set_user(self, subject: str, **claims: str) -> None:
        """Declare the claims the provider asserts for ``subject``."""
        answer = requests.put(
            f"{self.issuer}/users/{urllib.parse.quote(subject, safe='')}", json=claims, timeout=10
        )
        assert answer.status_code == 204, answer.text

    def authorize(self, authorization_url: str, subject: str) -> str:
        """Sign ``subject`` in on the provider's form; the callback URL it redirects to."""
        answer = requests.post(
            authorization_url, data={"sub": subject}, allow_redirects=False, timeout=10
        )
        assert answer.status_code in (302, 303), answer.text
        return str(answer.headers["Location"])


@contextmanager
def running() -> Iterator[Provider]:
    """A provider on a free loopback port until the block ends."""
    with oidc_provider_mock.run_server_in_thread(port=0) as server:
        yield Provider(issuer=f"http://localhost:{server.server_port}")
