// MCP Hub pages: copy buttons and the details dialog. Everything else is htmx attributes.
(function () {
  "use strict";

  function copyText(text, button) {
    const done = () => {
      const label = button.textContent;
      button.textContent = "Copied";
      button.setAttribute("aria-live", "polite");
      setTimeout(() => { button.textContent = label; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, () => fallbackCopy(text) && done());
    } else if (fallbackCopy(text)) {
      done();
    }
  }

  // Plain-HTTP deployments have no Clipboard API: select a hidden textarea and copy that.
  function fallbackCopy(text) {
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    let ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    area.remove();
    return ok;
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-copy], [data-copy-from]");
    if (!button) return;
    const source = button.dataset.copyFrom && document.getElementById(button.dataset.copyFrom);
    copyText(source ? source.textContent : button.dataset.copy, button);
  });

  // Messages dismiss on click; good news fades by itself, errors stay until read.
  function settleFlashes() {
    document.querySelectorAll(".flash-success, .flash-info").forEach((flash) => {
      setTimeout(() => flash.remove(), 6000);
    });
  }
  document.addEventListener("DOMContentLoaded", settleFlashes);

  // On a phone the nav scrolls sideways: bring the current page's entry into view.
  document.addEventListener("DOMContentLoaded", () => {
    const nav = document.querySelector(".topbar nav");
    const current = nav && nav.querySelector('[aria-current="page"]');
    if (current && nav.scrollWidth > nav.clientWidth) {
      const offset = current.getBoundingClientRect().left - nav.getBoundingClientRect().left;
      nav.scrollLeft += offset - (nav.clientWidth - current.offsetWidth) / 2;
    }
  });
  document.addEventListener("htmx:oobAfterSwap", settleFlashes);
  document.addEventListener("click", (event) => {
    const flash = event.target.closest(".flash-area .flash");
    if (flash) flash.remove();
  });

  // An htmx action the hub refuses or fails would otherwise do nothing visible: say what happened,
  // in the words of the error page (or the JSON detail) it answered with.
  document.addEventListener("htmx:responseError", (event) => {
    const xhr = event.detail.xhr;
    const page = new DOMParser().parseFromString(xhr.responseText || "", "text/html");
    const title = page.querySelector(".error-page h1");
    const detail = page.querySelector(".error-page h1 + p");
    const text = title ? `${title.textContent}: ${detail ? detail.textContent : ""}` : `The hub answered ${xhr.status} ${xhr.statusText}.`;
    const flash = document.createElement("div");
    flash.className = "flash flash-error";
    flash.setAttribute("role", "alert");
    flash.textContent = text;
    document.getElementById("flash").replaceChildren(flash);
  });
  document.addEventListener("htmx:sendError", () => {
    const flash = document.createElement("div");
    flash.className = "flash flash-error";
    flash.setAttribute("role", "alert");
    flash.textContent = "The hub could not be reached. Check your connection and try again.";
    document.getElementById("flash").replaceChildren(flash);
  });

  // A Servers action re-renders its row: keyboard and screen-reader users land on the result panel.
  document.addEventListener("htmx:afterSwap", (event) => {
    const id = event.detail.target && event.detail.target.id;
    const panel = id && id.startsWith("server-") && document.querySelector(`#${CSS.escape(id)} .panel`);
    if (panel) panel.focus();
  });

  // A result panel under a Servers row closes without asking the server again.
  document.addEventListener("click", (event) => {
    const close = event.target.closest("[data-close-panel]");
    if (close) close.closest("tr").remove();
  });

  // Forms that ask before they act. No inline handlers anywhere: the pages' CSP runs only our files.
  document.addEventListener("submit", (event) => {
    const question = event.target.dataset ? event.target.dataset.confirm : undefined;
    if (question && !window.confirm(question)) event.preventDefault();
  });

  // A field too large to send is refused here, before the browser sends it: the text stays where it
  // was typed or pasted, with the reason beside it (the server could only answer "too large").
  document.addEventListener("submit", (event) => {
    for (const field of event.target.querySelectorAll("[data-max-bytes]")) {
      const size = new TextEncoder().encode(field.value).length;
      const limit = Number(field.dataset.maxBytes);
      const note = document.getElementById(field.id + "-size-error");
      if (note) note.hidden = size <= limit;
      if (size > limit) {
        event.preventDefault();
        event.stopImmediatePropagation();
        if (note) note.textContent = `This is ${(size / 1e6).toFixed(1)} MB; at most ${(limit / 1e6).toFixed(1)} MB can be sent. Remove what you do not need, or split it.`;
        field.focus();
        return;
      }
    }
  }, true);

  // A server's form shows the fields of the chosen transport (without script, both groups show).
  function showTransportFields() {
    const select = document.querySelector(".server-form select[name=transport]");
    if (!select) return;
    for (const group of document.querySelectorAll(".server-form .transport-fields")) {
      group.hidden = !group.dataset.transport.split(" ").includes(select.value);
    }
  }
  document.addEventListener("DOMContentLoaded", showTransportFields);
  document.addEventListener("change", (event) => {
    if (event.target.matches(".server-form select[name=transport]")) showTransportFields();
  });

  // Filter selects apply themselves (a <noscript> button covers the rest).
  document.addEventListener("change", (event) => {
    if (event.target.matches("select[data-autosubmit]")) event.target.form.requestSubmit();
  });

  document.addEventListener("htmx:afterSwap", (event) => {
    if (event.detail.target.id === "dialog-body") {
      const dialog = document.getElementById("dialog");
      if (!dialog.open) dialog.showModal();
    }
  });
})();
