"""Submit an admin form the way a browser would: exactly what the page rendered, plus edits."""

from __future__ import annotations

from html.parser import HTMLParser

from django.test import Client


class _FormParser(HTMLParser):
    """Collects the successful controls of the page's main `<form>` (the one with `id="…_form"`)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.data: list[tuple[str, str]] = []
        self._in_form = False
        self._textarea: str | None = None
        self._select: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {key: value or "" for key, value in attrs}
        if tag == "form" and a.get("id", "").endswith("_form"):
            self._in_form = True
        if not self._in_form:
            return
        if tag == "input" and a.get("name") and self._is_sent(a):
            default = "on" if a.get("type") in ("checkbox", "radio") else ""
            self.data.append((a["name"], a.get("value", default)))
        elif tag == "textarea":
            self._textarea, self._text = a.get("name"), []
        elif tag == "select":
            self._select = a.get("name")
        elif tag == "option" and self._select and "selected" in a:
            self.data.append((self._select, a.get("value", "")))

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._in_form = False
        elif tag == "textarea" and self._textarea:
            self.data.append((self._textarea, "".join(self._text).removeprefix("\n")))
            self._textarea = None
        elif tag == "select":
            self._select = None

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self._text.append(data)

    @staticmethod
    def _is_sent(a: dict[str, str]) -> bool:
        kind = a.get("type", "text")
        if kind in ("submit", "button", "file", "image", "reset"):
            return False
        return kind not in ("checkbox", "radio") or "checked" in a


def form_data(html: str) -> dict[str, str | list[str]]:
    parser = _FormParser()
    parser.feed(html)
    data: dict[str, str | list[str]] = {}
    for name, value in parser.data:
        if name in data:
            previous = data[name]
            data[name] = [*previous, value] if isinstance(previous, list) else [previous, value]
        else:
            data[name] = value
    return data


def submit(client: Client, url: str, changes: dict[str, str | list[str] | None] | None = None):
    """GET `url`, change some fields (None unticks/removes one), POST it back."""
    page = client.get(url)
    assert page.status_code == 200, page.status_code
    data = form_data(page.content.decode())
    for name, value in (changes or {}).items():
        if value is None:
            data.pop(name, None)
        else:
            data[name] = value
    return client.post(url, data)
