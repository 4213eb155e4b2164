// The "hub needs your answer" panel of every signed-in page (apps/chat/asks.py): a backend's
// question during a call from an MCP client that cannot ask the user itself — a form or a link
// (elicitation, drawn by host.js) or a request to use the user's model (sampling: Allow / Deny).
// Answered here, it leaves every page; a wrong value is shown with the question, which stays.
(function () {
  "use strict";
  const panel = document.getElementById("asks");
  if (!panel) return;
  const list = document.getElementById("asks-list");
  const { el } = hubRender;
  const shown = new Map();  // question id -> {question, node}

  function refresh() { panel.hidden = shown.size === 0; }

  function sampling(q, send) {
    const node = el("div", "approval card ask-sampling");
    node.id = q.id + "-box";
    node.append(el("p", "", `${q.reason || "A server asks to use your model"}.`));
    node.append(el("pre", "tool-args", JSON.stringify(q.arguments, null, 2)));
    for (const [label, allow, style] of [["Allow", true, "btn-primary"], ["Deny", false, "btn-danger"]]) {
      const b = el("button", `btn btn-small ${style}`, label);
      b.type = "button";
      b.addEventListener("click", () => send({ id: q.id, allow }));
      node.append(b);
    }
    return node;
  }

  function show(q, send, error) {
    const old = shown.get(q.id);
    if (q.kind === "sampling") {
      const node = sampling(q, send);
      if (old) old.node.replaceWith(node); else list.append(node);
      shown.set(q.id, { question: q, node });
    } else {
      hubHost.elicitation(error ? { ...q, error } : q, list, send);
      shown.set(q.id, { question: q, node: document.getElementById(q.id + "-box") });
    }
    refresh();
  }

  function connect() {
    const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws/asks/`);
    const send = (payload) => ws.send(JSON.stringify({ type: "answer", payload }));
    ws.onopen = () => { panel.dataset.connected = "true"; };
    ws.onmessage = (message) => {
      const event = JSON.parse(message.data);
      const p = event.payload || {};
      if (event.type === "ask") show(p, send);
      else if (event.type === "gone") {
        const item = shown.get(p.id);
        if (item) { item.node.remove(); shown.delete(p.id); refresh(); }
      } else if (event.type === "error" && shown.has(p.id)) show(shown.get(p.id).question, send, p.message);
    };
    ws.onclose = (e) => {
      panel.dataset.connected = "false";
      if (e.code !== 4403) setTimeout(connect, 2000);
    };
  }
  connect();
})();
