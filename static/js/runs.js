// A run's page: steps rendered by the server, later ones appended as /ws/runs/<id>/ sends them.
// On every (re)connect the page sends `resume` after the last round it shows: the socket replays
// the steps it missed, then the run's state. The page reloads when the run ends or waits on a
// call it does not show (status, answer, approval forms and buttons come from the server). Model
// text is rendered by render.js (safe markdown), tool text set with textContent only.
(function () {
  "use strict";
  const root = document.getElementById("run");
  if (!root) return;
  const list = document.getElementById("run-steps");
  // Stored steps' results beyond their text (images, links, structured content), drawn once.
  for (const data of list.querySelectorAll(".toolcard script[type='application/json']")) {
    const rich = JSON.parse(data.textContent);
    const shown = hubRender.rich(rich.content, rich.structuredContent, readResource);
    if (shown) data.replaceWith(shown);
  }
  if (root.dataset.active !== "true") return;

  const el = hubRender.el;
  const DONE_AT_LINK = "Done at the link: the server heard you finished.";
  const LABELS = JSON.parse(document.getElementById("run-status-labels").textContent);

  function addStep(step) {
    if (list.querySelector(`[data-round="${step.round}"]`)) return;
    const item = el("li", "step card");
    item.dataset.round = step.round;
    const head = el("p");
    head.append(el("strong", "", `Round ${step.round}`), el("span", "muted", ` · ${step.input_tokens} in / ${step.output_tokens} out`));
    item.append(head);
    if (step.reasoning) {  // as run.html renders a stored step's reasoning: collapsed, as text
      const details = el("details", "reasoning");
      details.append(el("summary", "", "Reasoning"), el("div", "reasoning-text", step.reasoning));
      item.append(details);
    }
    if (step.text) {
      const text = el("div", step.finish_reason === "refusal" ? "step-text md step-refusal" : "step-text md");
      hubRender.markdown(step.text, text);
      item.append(text);
    }
    if (step.finish_reason === "length") item.append(el("p", "muted cut-note", "Cut at the model's output limit."));
    for (const call of step.tool_calls || []) item.append(toolCard(call));
    live.replaceChildren();  // the round's calls are in its step now
    list.append(item);
    document.getElementById("run-rounds").textContent = step.round;
    document.getElementById("run-progress").value = step.round;
    document.getElementById("run-note").textContent = "";
  }

  // As the server renders a stored step's calls (run.html).
  function toolCard(call) {
    const card = el("details", call.isError ? "toolcard is-error" : "toolcard");
    const took = call.duration_ms == null ? "" : ` · ${Math.round(call.duration_ms)} ms`;
    card.append(
      el("summary", "", `${call.name} · ${call.isError ? "error" : "done"}${took}`),
      el("div", "tool-label", "Arguments"), el("pre", "tool-args", JSON.stringify(call.arguments, null, 2)),
      el("div", "tool-label", "Result"), el("pre", "tool-result", hubRender.resultText((call.result || {}).content, (call.result || {}).structuredContent)),
    );
    if (call.elicitation_complete) card.append(el("p", "muted elicitation-done", DONE_AT_LINK));
    const more = hubRender.rich((call.result || {}).content, (call.result || {}).structuredContent, readResource);
    if (more) card.append(more);
    return card;
  }

  // Calls of the round under way: their progress bars and log lines as they come.
  const live = el("div", "run-live");
  list.after(live);
  function liveCard(id) {
    let card = live.querySelector(`[data-call="${CSS.escape(id)}"]`);
    if (!card) {
      card = el("details", "toolcard");
      card.dataset.call = id;
      card.open = true;
      card.append(el("summary", "", "Running…"));
      live.append(card);
    }
    return card;
  }

  // A run's resource links are read through the REST API, as the run's owner.
  async function readResource(uri) {
    const response = await fetch("/api/runs/" + encodeURIComponent(root.dataset.run) + "/resource/?uri=" + encodeURIComponent(uri));
    const answer = await response.json();
    if (!response.ok) throw new Error(answer.detail || response.statusText);
    return answer.contents || [];
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
      else if (event.type === "status") {
        document.getElementById("run-status").textContent = LABELS[event.payload.status] || event.payload.status;
        // Moved to another worker (its own was lost or stopped): said until the next round.
        if (event.payload.message) document.getElementById("run-note").textContent = event.payload.message;
      }
      else if (event.type === "provider_status") document.getElementById("run-note").textContent = event.payload.message;
      else if (event.type === "tool_progress") hubRender.progress(liveCard(event.payload.id), event.payload);
      else if (event.type === "tool_log") hubRender.logLine(liveCard(event.payload.id), event.payload);
      else if (event.type === "end") window.location.reload();
      else if (event.type === "approval_required" && !shown(event.payload)) window.location.reload();
      else if (event.type === "elicitation_required" && !document.getElementById(event.payload.id + "-box")) window.location.reload();
      else if (event.type === "elicitation_complete") {
        // Done at a link: a question still shown for it was answered so (the run no longer waits).
        if (hubHost.completed(event.payload)) window.location.reload();
        else document.getElementById("run-note").textContent = DONE_AT_LINK;
      }
    };
    ws.onclose = () => { root.dataset.connected = "false"; setTimeout(connect, 1000); };
  }
  connect();
})();
