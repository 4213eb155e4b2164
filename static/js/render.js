// Safe rendering of model and tool output, shared by the chat and run pages (window.hubRender).
// Model text is rendered as a small markdown subset by building DOM nodes with textContent only:
// no model output is ever parsed as HTML, and links keep only http(s)/mailto targets, so a model's
// <script> or javascript: link cannot run. Elements marked `data-markdown` (text the server put
// there, escaped) are rendered once the page is parsed; without JavaScript they read as plain text.
(function () {
  "use strict";

  // An element with a class and text (textContent: never parsed as HTML).
  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  const LIST = /^\s*([-*+]|\d+\.)\s+/;
  function markdown(src, into) {
    into.replaceChildren();
    const lines = src.split("\n");
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      let m;
      if (/^\s*```/.test(line)) {
        const code = [];
        for (i++; i < lines.length && !/^\s*```/.test(lines[i]); i++) code.push(lines[i]);
        i++;
        const pre = el("pre"); pre.append(el("code", "", code.join("\n"))); into.append(pre);
      } else if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) {
        const h = el("h" + Math.min(6, m[1].length + 2)); inline(m[2], h); into.append(h); i++;
      } else if (LIST.test(line)) {
        const list = el(/^\s*\d+\./.test(line) ? "ol" : "ul");
        for (; i < lines.length && LIST.test(lines[i]); i++) { const li = el("li"); inline(lines[i].replace(LIST, ""), li); list.append(li); }
        into.append(list);
      } else if (!line.trim()) {
        i++;
      } else {
        const para = [];
        for (; i < lines.length && lines[i].trim() && !/^\s*```|^#{1,6}\s/.test(lines[i]) && !LIST.test(lines[i]); i++) para.push(lines[i]);
        const p = el("p"); inline(para.join("\n"), p); into.append(p);
      }
    }
  }

  const INLINE = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*)|(\[[^\]]+\]\([^)\s]+\))/g;
  function inline(text, into) {
    let last = 0, m;
    INLINE.lastIndex = 0;
    while ((m = INLINE.exec(text))) {
      if (m.index > last) into.append(text.slice(last, m.index));
      const t = m[0];
      if (m[1]) into.append(el("code", "", t.slice(1, -1)));
      else if (m[2]) into.append(el("strong", "", t.slice(2, -2)));
      else if (m[3]) into.append(el("em", "", t.slice(1, -1)));
      else into.append(link(t));
      last = INLINE.lastIndex;
    }
    if (last < text.length) into.append(text.slice(last));
  }

  function link(t) {
    const m = /^\[([^\]]+)\]\(([^)\s]+)\)$/.exec(t);
    let url = null;
    try { const u = new URL(m[2], location.href); if (["http:", "https:", "mailto:"].includes(u.protocol)) url = u.href; } catch (e) { url = null; }
    if (!url) return document.createTextNode(t);
    const a = el("a", "", m[1]);
    a.href = url; a.rel = "noopener noreferrer nofollow"; a.target = "_blank";
    return a;
  }

  // A tool result as the model was told it (apps.chat.tools.result_text, whole): text, a
  // resource's text, other content (images, audio) by its type rather than as base64.
  function resultText(content, structured) {
    const parts = (content || []).filter((item) => item && typeof item === "object").map((item) => {
      if (item.type === "text") return String(item.text ?? "");
      if (item.type === "resource" && item.resource && typeof item.resource === "object") {
        return String(item.resource.text || `[resource ${item.resource.uri || ""}]`);
      }
      return `[${item.type || "content"} ${item.mimeType || ""}]`.replace(" ]", "]");
    });
    if (!parts.length && structured != null) parts.push(JSON.stringify(structured));
    return parts.join("\n");
  }
  // --- What MCP carries beyond text (tool results, prompt messages, resources) -------------------
  // Binary content becomes a data: URL only for image and audio types, and only from base64.
  const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
  function dataUrl(mime, data) {
    return typeof data === "string" && data && BASE64.test(data) ? "data:" + mime + ";base64," + data : null;
  }
  function media(mime, data, alt) {
    mime = String(mime || "");
    if (/^image\/(png|jpeg|gif|webp)$/.test(mime)) {
      const url = dataUrl(mime, data);
      if (url) { const img = el("img", "mcp-image"); img.src = url; img.alt = alt || mime; return img; }
    } else if (/^audio\//.test(mime)) {
      const url = dataUrl(mime, data);
      if (url) { const audio = el("audio", "mcp-audio"); audio.controls = true; audio.src = url; return audio; }
    }
    return null;
  }

  function bytes(data) { return Math.floor(String(data || "").length * 3 / 4); }

  // One resource's contents (text, or a blob shown as media or by its size).
  function resourceBody(item) {
    if (typeof item.text === "string") return el("pre", "mcp-resource-text", item.text);
    const shown = media(item.mimeType, item.blob, item.uri);
    if (shown) return shown;
    return el("p", "muted", (item.mimeType || "binary") + ", " + bytes(item.blob) + " bytes" + (item.note ? " (" + item.note + ")" : ""));
  }

  // `read(uri)` resolves to the resource's contents: a link is read in place when clicked.
  function resourceLink(item, read) {
    const box = el("div", "mcp-link");
    const button = el("button", "link-button", item.name || item.title || item.uri);
    button.type = "button";
    button.title = item.uri || "";
    box.append(button, el("span", "muted", " " + (item.uri || "") + (item.description ? " · " + item.description : "")));
    button.addEventListener("click", async () => {
      const old = box.querySelector(".mcp-link-body");
      if (old) { old.remove(); return; }
      const body = el("div", "mcp-link-body", "Reading…");
      box.append(body);
      try {
        const contents = await read(item.uri);
        body.replaceChildren(...contents.map(resourceBody));
      } catch (e) { body.textContent = "Could not read it: " + ((e && e.message) || e); }
    });
    return box;
  }

  // Structured content: an array of flat objects as a table, a flat object as a two-column one,
  // anything deeper as a tree of <details>.
  function flat(value) { return value === null || typeof value !== "object"; }
  function table(rows, columns) {
    const t = el("table", "mcp-table");
    const head = el("tr");
    for (const c of columns) head.append(el("th", "", c));
    t.append(head);
    for (const row of rows) {
      const tr = el("tr");
      for (const c of columns) tr.append(el("td", "", row[c] === undefined ? "" : String(row[c])));
      t.append(tr);
    }
    return t;
  }
  function tree(value, label) {
    if (flat(value)) {
      const li = el("div", "mcp-leaf");
      if (label !== undefined) li.append(el("span", "mcp-key", label + ": "));
      li.append(el("span", "", JSON.stringify(value)));
      return li;
    }
    const details = el("details", "mcp-tree");
    details.open = true;
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
    details.append(el("summary", "", (label === undefined ? "" : label + " ") + (Array.isArray(value) ? "[" + value.length + "]" : "{" + entries.length + "}")));
    for (const [k, v] of entries) details.append(tree(v, k));
    return details;
  }
  function structured(value) {
    if (Array.isArray(value) && value.length && value.every((r) => r && !flat(r) && !Array.isArray(r) && Object.values(r).every(flat))) {
      return table(value, [...new Set(value.flatMap(Object.keys))]);
    }
    if (value && !flat(value) && !Array.isArray(value) && Object.values(value).every(flat)) {
      return table(Object.entries(value).map(([k, v]) => ({ field: k, value: flat(v) ? v : JSON.stringify(v) })), ["field", "value"]);
    }
    return tree(value);
  }

  // Everything of a result (or a prompt message) that its text alone does not show; null if none.
  function rich(content, structuredContent, read, withText) {
    const box = el("div", "mcp-content");
    for (const item of (content || []).filter((i) => i && typeof i === "object")) {
      if (item.type === "text") { if (withText) box.append(el("div", "mcp-text", String(item.text ?? ""))); }
      else if (item.type === "image" || item.type === "audio") box.append(media(item.mimeType, item.data, item.type) || el("p", "muted", "[" + item.type + " " + (item.mimeType || "") + ", " + bytes(item.data) + " bytes]"));
      else if (item.type === "resource_link") box.append(resourceLink(item, read));
      else if (item.type === "resource" && item.resource) {
        const details = el("details", "mcp-resource");
        details.append(el("summary", "", "Resource " + (item.resource.uri || "")), resourceBody(item.resource));
        box.append(details);
      }
    }
    if (structuredContent != null) box.append(el("div", "tool-label", "Structured content"), structured(structuredContent));
    return box.childNodes.length ? box : null;
  }

  // A call's live progress: a bar (indeterminate without a total) and the server's message.
  function progress(into, p) {
    let bar = into.querySelector(".mcp-progress");
    if (!bar) {
      bar = el("div", "mcp-progress");
      bar.append(el("progress"), el("span", "muted"));
      into.append(bar);
    }
    const meter = bar.querySelector("progress");
    if (typeof p.total === "number" && p.total > 0) { meter.max = p.total; meter.value = Math.min(p.progress, p.total); }
    else meter.removeAttribute("value");
    bar.querySelector("span").textContent = " " + p.progress + (typeof p.total === "number" ? " / " + p.total : "") + (p.message ? " · " + p.message : "");
  }

  // A call's log messages, as lines of their level.
  function logLine(into, p) {
    let list = into.querySelector(".mcp-log");
    if (!list) { into.append(el("div", "tool-label", "Log")); list = el("ol", "mcp-log"); into.append(list); }
    const line = el("li", "mcp-log-" + String(p.level || "info").replace(/[^a-z]/g, ""));
    line.append(el("span", "mcp-key", (p.level || "info") + (p.logger ? " " + p.logger : "") + ": "), el("span", "", typeof p.data === "string" ? p.data : JSON.stringify(p.data)));
    list.append(line);
  }

  window.hubRender = { el, markdown, resultText, rich, progress, logLine, resourceBody };
  for (const node of document.querySelectorAll("[data-markdown]")) markdown(node.textContent, node);
})();
