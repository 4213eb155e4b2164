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
  window.hubRender = { el, markdown, resultText };
  for (const node of document.querySelectorAll("[data-markdown]")) markdown(node.textContent, node);
})();
