// A run's page: steps rendered by the server, later ones appended as /ws/runs/<id>/ sends them;
// the page reloads when the run ends (status, answer and buttons come from the server). Model
// and tool text is set with textContent only, never parsed as HTML.
(function () {
  "use strict";
  const root = document.getElementById("run");
  if (!root) return;
  const list = document.getElementById("run-steps");
  const ACTIVE = ["queued", "running", "waiting_approval"];
  if (!ACTIVE.includes(root.dataset.status)) return;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function addStep(step) {
    if (list.querySelector(`[data-round="${step.round}"]`)) return;
    const item = el("li", "step card");
    item.dataset.round = step.round;
    const head = el("p");
    head.append(el("strong", "", `Round ${step.round}`), el("span", "muted", ` · ${step.input_tokens} in / ${step.output_tokens} out`));
    item.append(head);
    if (step.text) item.append(el("p", "step-text", step.text));
    for (const call of step.tool_calls || []) {
      const card = el("details", "toolcard");
      card.append(el("summary", "", `${call.name} · ${call.isError ? "error" : "done"}`), el("pre", "", JSON.stringify(call.arguments)));
      item.append(card);
    }
    list.append(item);
    document.getElementById("run-rounds").textContent = step.round;
    document.getElementById("run-progress").value = step.round;
  }

  async function catchUp() {
    // Steps completed between rendering and connecting come from the API.
    const response = await fetch(`/api/runs/${root.dataset.ws.split("/")[3]}/`, { credentials: "same-origin" });
    if (!response.ok) return;
    const run = await response.json();
    run.steps.forEach(addStep);
    if (!ACTIVE.includes(run.status)) window.location.reload();
  }

  function connect() {
    const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${root.dataset.ws}`);
    ws.onopen = () => { root.dataset.connected = "true"; catchUp(); };
    ws.onmessage = (message) => {
      const event = JSON.parse(message.data);
      if (event.type === "step") addStep(event.payload);
      else if (event.type === "status") document.getElementById("run-status").textContent = event.payload.status;
      else if (event.type === "end" || event.type === "approval_required") window.location.reload();
    };
    ws.onclose = () => { root.dataset.connected = "false"; setTimeout(connect, 1000); };
  }
  connect();
})();
