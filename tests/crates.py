"""roc-validator, offline: a version's RO-Crate validated at the Workflow Run Crate profile's required level with the
network out of reach. The validator fetches the JSON-LD contexts a crate names through its HTTP cache, and in
offline mode reads them only from there; `warmed` fills a cache with the vendored copies (tests/vendor/rocrate),
as `rocrate-validator cache warm` would from the web, and `refusing_network` makes any connection an error that
the test sees.
"""
from __future__ import annotations

import io
import socket
from pathlib import Path

VENDOR = Path(__file__).resolve().parent / "vendor" / "rocrate"
CONTEXTS = {"https://w3id.org/ro/crate/1.1/context": VENDOR / "ro-crate-1.1-context.jsonld"}
PROFILE = "workflow-run-crate-0.5"


def warmed(cache: Path) -> Path:
    """A roc-validator HTTP cache at `cache` holding every vendored context under its URL, as the web serves it."""
    import requests
    import urllib3
    from requests_cache import CachedSession

    class Vendored(requests.adapters.HTTPAdapter):
        def send(self, request, **_):
            body = io.BytesIO(CONTEXTS[request.url].read_bytes())
            raw = urllib3.HTTPResponse(body=body, headers={"Content-Type": "application/ld+json"}, status=200,
                                       preload_content=False, request_url=request.url)
            return self.build_response(request, raw)

    session = CachedSession(str(cache), backend="sqlite", expire_after=-1)
    session.mount("https://", Vendored())
    for url in CONTEXTS:
        assert session.get(url).status_code == 200
    session.close()
    return cache


def refusing_network(monkeypatch) -> list:
    """Every connection attempt from now on fails, and is recorded in the list returned."""
    tried = []

    def refuse(sock, address, *_):
        tried.append(address)
        raise OSError(f"the network is out of reach in this test ({address})")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    return tried


def validate(folder: Path, cache: Path) -> list[str]:
    """The issues roc-validator finds in `folder`'s crate at the profile's required level, offline (none: valid)."""
    from rocrate_validator import models, services

    settings = models.ValidationSettings(rocrate_uri=str(folder), profile_identifier=PROFILE, offline=True,
                                         requirement_severity=models.Severity.REQUIRED, cache_path=cache)
    result = services.validate(settings)
    issues = [f"{issue.severity.name}: {issue.message}" for issue in result.get_issues()]
    return issues or ([] if result.passed() else ["not passed, no issue named"])
