"""The built site in headless Chromium, served over http: the navigation and search render.

Search runs in a web worker that Material starts when someone types, and headless Chromium's
``--dump-dom`` does not wait for it. So the test's server hands Chromium the home page with a
small script that types a query into the search box, and ``/__hold``, a request that answers
after a few seconds: while it is pending the page's virtual time stands still, and the worker
(which runs in real time) builds its index and answers.
"""

from __future__ import annotations

import functools
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
#: Pages of the navigation, by the link the home page's sidebar must hold.
NAV_LINKS = ("getting-started/quick-start/", "concepts/exactly-once/", "guides/your-schema/",
             "operations/runbook/", "reference/configuration/", "reference/cli/",
             "performance/", "architecture/")
HOLD_SECONDS = 2.5
TYPE_QUERY = """<script>
function typeQuery() {
  var input = document.querySelector("[data-md-component=search-query]");
  input.focus();
  input.value = "quarantine";
  input.dispatchEvent(new Event("input", {bubbles: true}));
}
document$.subscribe(function () {
  typeQuery();
  fetch("/__hold").then(function () { typeQuery(); return fetch("/__hold"); });
});
</script>
"""


class _Site(SimpleHTTPRequestHandler):
    """The built site; the home page with :data:`TYPE_QUERY`, and ``/__hold``."""

    def do_GET(self) -> None:
        if self.path == "/__hold":
            time.sleep(HOLD_SECONDS)
            self.send_response(204)
            self.end_headers()
            return
        if self.path in ("/", "/index.html"):
            page = Path(self.directory, "index.html").read_text(encoding="utf-8")
            body = page.replace("</body>", TYPE_QUERY + "</body>").encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def served(built_site: Path) -> Iterator[str]:
    """The built site on a loopback port; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 functools.partial(_Site, directory=str(built_site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def dump_dom(url: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    """The DOM of ``url`` after headless Chromium ran its scripts."""
    command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={tmp / 'profile'}", "--window-size=1200,1600",
               "--virtual-time-budget=10000", "--dump-dom", url]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_home_page_renders_navigation_and_search_results(served: str, tmp_path: Path) -> None:
    assert CHROMIUM.exists(), "headless Chromium missing: run .ci/ensure-chromium.sh"

    result = dump_dom(f"{served}/", tmp_path)

    dom = result.stdout
    assert result.returncode == 0, result.stderr[-2000:]
    for link in NAV_LINKS:
        assert f'href="{link}"' in dom, link
    found = re.search(r'md-search-result__meta">\s*(\d+) matching documents', dom)
    assert found, "search did not answer 'quarantine': " + dom[dom.find("md-search-result"):][:300]
    assert int(found[1]) >= 5
    assert "md-search-result__item" in dom
