"""A small W3C WebDriver client (standard library only) for driving the app through
tauri-driver, which forwards to WebKitWebDriver."""

import base64
import http.client
import json
import time
import urllib.parse

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


class WebDriverError(Exception):
    pass


class Session:
    def __init__(self, url, application, timeout=60):
        # One kept-alive connection. A new connection per command (what urllib does, with
        # `Connection: close`) makes tauri-driver's forwarded requests to WebKitWebDriver fail
        # now and then with "connection error", mid-test.
        address = urllib.parse.urlsplit(url)
        self.connection = http.client.HTTPConnection(address.hostname, address.port)
        caps = {"capabilities": {"alwaysMatch": {"tauri:options": {"application": application}}}}
        self.id = self._request("POST", "/session", caps, timeout=timeout)["sessionId"]

    def _request(self, method, path, body=None, timeout=30):
        data = None if body is None else json.dumps(body).encode()
        self.connection.timeout = timeout
        if self.connection.sock:
            self.connection.sock.settimeout(timeout)
        self.connection.request(method, path, body=data,
                                headers={"Content-Type": "application/json"})
        response = self.connection.getresponse()
        payload = response.read()
        if response.status >= 400:
            raise WebDriverError(f"{method} {path}: {response.status} {payload[:500]!r}")
        return json.loads(payload or b"{}").get("value")

    def _session(self, method, path, body=None):
        return self._request(method, f"/session/{self.id}{path}", body)

    def close(self):
        try:
            self._request("DELETE", f"/session/{self.id}")
        except (WebDriverError, OSError, http.client.HTTPException):
            pass
        self.connection.close()

    def find_all(self, css):
        found = self._session("POST", "/elements", {"using": "css selector", "value": css})
        return [Element(self, e[ELEMENT]) for e in found]

    def _find_settled(self, css):
        """`find_all`, or `None` when the page changed under the search: WebKitWebDriver then
        answers "stale element reference" even to a search."""
        try:
            return self.find_all(css)
        except WebDriverError as error:
            if "stale element reference" in str(error):
                return None
            raise

    def wait_for(self, css, timeout=30, text=None, what=None):
        """The first element matching `css` (whose text contains `text`), waiting for it. Its
        text then is in `seen`: the element may be gone by the time it is asked again."""
        deadline = time.monotonic() + timeout
        while True:
            for element in self._find_settled(css) or []:
                try:
                    element.seen = element.text()
                except WebDriverError:
                    continue  # it went away meanwhile
                if text is None or text in element.seen:
                    return element
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what or css!r} (text {text!r})")
            time.sleep(0.05)

    def click(self, css, text=None, from_script=False, timeout=30):
        """Clicks the first element matching `css` (and `text`), again if it was redrawn just
        before the click. `from_script` clicks with the element's own `click()`: WebDriver's
        click waits for the window to handle it, and WebKitWebDriver drops the connection when
        the window hides meanwhile (as it does when an approved computer action starts)."""
        deadline = time.monotonic() + timeout
        while True:
            element = self.wait_for(css, timeout=timeout, text=text)
            try:
                if from_script:
                    self.execute("arguments[0].click()", element.ref)
                else:
                    element.click()
                return
            except WebDriverError as error:
                if "stale element reference" not in str(error) or time.monotonic() > deadline:
                    raise

    def wait_gone(self, css, timeout=30):
        deadline = time.monotonic() + timeout
        while self._find_settled(css) != []:
            if time.monotonic() > deadline:
                raise AssertionError(f"{css!r} is still there")
            time.sleep(0.05)

    def execute(self, script, *args):
        return self._session("POST", "/execute/sync", {"script": script, "args": list(args)})

    def execute_async(self, script, *args):
        """Runs `script`, which calls its last argument with the result."""
        return self._session("POST", "/execute/async", {"script": script, "args": list(args)})

    def screenshot(self, path):
        with open(path, "wb") as f:
            f.write(base64.b64decode(self._session("GET", "/screenshot")))


class Element:
    def __init__(self, session, id):
        self.session = session
        self.id = id
        self.seen = None

    @property
    def ref(self):
        """This element as a script argument."""
        return {ELEMENT: self.id}

    def click(self):
        self.session._session("POST", f"/element/{self.id}/click", {})

    def send_keys(self, text):
        self.session._session("POST", f"/element/{self.id}/value", {"text": text})

    def text(self):
        return self.session._session("GET", f"/element/{self.id}/text")

    def attribute(self, name):
        return self.session._session("GET", f"/element/{self.id}/attribute/{name}")
