// A run's page: steps rendered by the server, later ones appended as /ws/runs/<id>/ sends them.
// On every (re)connect the page sends `resume` after the last round it shows: the socket replays
// the steps it missed, then the run's state. The page reloads when the run ends or waits on a
// call it does not show (status, answer, approval forms and buttons come from the server). Model
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

  function lastRound() {
    const rounds = [...list.querySelectorAll("[data-round]")].map((item) => Number(item.dataset.round));
    return Math.max(0, ...rounds);
  }

  function shown(call) {
    return [...document.querySelectorAll(".approval[data-call]")].some((item) => item.dataset.call === call.id);
  }

  function connect() {
    const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${root.dataset.ws}`);
    ws.onopen = () => {
      ws.send(JSON.stringify({ type: "resume", payload: { after: lastRound() } }));
      root.dataset.connected = "true";
    };
    ws.onmessage = (message) => {
      const event = JSON.parse(message.data);
      if (event.type === "step") addStep(event.payload);
      else if (event.type === "status") document.getElementById("run-status").textContent = event.payload.status;
      else if (event.type === "end") window.location.reload();
      else if (event.type === "approval_required" && !shown(event.payload)) window.location.reload();
    };
    ws.onclose = () => { root.dataset.connected = "false"; setTimeout(connect, 1000); };
  }
  connect();
})();
